package cudart

import (
	"errors"
	"fmt"
)

// ErrorCode is cudaError_t.
type ErrorCode int32

// The CUDA error codes rmmgo names. Any other code still travels in an
// *Error with its number; Name reports it as "cudaError(<n>)" when the
// backend cannot name it.
const (
	Success                          ErrorCode = 0
	ErrorInvalidValue                ErrorCode = 1
	ErrorMemoryAllocation            ErrorCode = 2
	ErrorInitializationError         ErrorCode = 3
	ErrorCudartUnloading             ErrorCode = 4
	ErrorInvalidDevicePointer        ErrorCode = 17
	ErrorInvalidMemcpyDirection      ErrorCode = 21
	ErrorInsufficientDriver          ErrorCode = 35
	ErrorNoDevice                    ErrorCode = 100
	ErrorInvalidDevice               ErrorCode = 101
	ErrorInvalidResourceHandle       ErrorCode = 400
	ErrorNotReady                    ErrorCode = 600
	ErrorIllegalAddress              ErrorCode = 700
	ErrorHostMemoryAlreadyRegistered ErrorCode = 712
	ErrorNotSupported                ErrorCode = 801
)

var codeNames = map[ErrorCode]string{
	Success:                          "cudaSuccess",
	ErrorInvalidValue:                "cudaErrorInvalidValue",
	ErrorMemoryAllocation:            "cudaErrorMemoryAllocation",
	ErrorInitializationError:         "cudaErrorInitializationError",
	ErrorCudartUnloading:             "cudaErrorCudartUnloading",
	ErrorInvalidDevicePointer:        "cudaErrorInvalidDevicePointer",
	ErrorInvalidMemcpyDirection:      "cudaErrorInvalidMemcpyDirection",
	ErrorInsufficientDriver:          "cudaErrorInsufficientDriver",
	ErrorNoDevice:                    "cudaErrorNoDevice",
	ErrorInvalidDevice:               "cudaErrorInvalidDevice",
	ErrorInvalidResourceHandle:       "cudaErrorInvalidResourceHandle",
	ErrorNotReady:                    "cudaErrorNotReady",
	ErrorIllegalAddress:              "cudaErrorIllegalAddress",
	ErrorHostMemoryAlreadyRegistered: "cudaErrorHostMemoryAlreadyRegistered",
	ErrorNotSupported:                "cudaErrorNotSupported",
}

// Name is the code's CUDA name, e.g. "cudaErrorMemoryAllocation".
func (c ErrorCode) Name() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("cudaError(%d)", int32(c))
}

func (c ErrorCode) String() string { return c.Name() }

// Error is a failed CUDA runtime call. It carries the code, its name, the
// runtime's description and the function that failed.
//
// errors.Is matches an *Error against another *Error by code, so
// errors.Is(err, cudart.ErrMemoryAllocation) tells an out-of-memory failure
// from any other.
type Error struct {
	Code ErrorCode
	Name string // CUDA's name for Code, e.g. "cudaErrorMemoryAllocation"
	Desc string // CUDA's description, e.g. "out of memory"; may be empty
	Func string // the runtime function that failed, e.g. "cudaMalloc"; may be empty
}

func (e *Error) Error() string {
	name := e.Name
	if name == "" {
		name = e.Code.Name()
	}
	s := name
	if e.Desc != "" {
		s += " (" + e.Desc + ")"
	}
	if e.Func != "" {
		s = e.Func + ": " + s
	}
	return s
}

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		return t.Code == e.Code
	}
	return false
}

// Sentinels for errors.Is.
var (
	ErrInvalidValue         = &Error{Code: ErrorInvalidValue}
	ErrMemoryAllocation     = &Error{Code: ErrorMemoryAllocation}
	ErrInvalidDevice        = &Error{Code: ErrorInvalidDevice}
	ErrInvalidDevicePointer = &Error{Code: ErrorInvalidDevicePointer}
	ErrInvalidResource      = &Error{Code: ErrorInvalidResourceHandle}
	ErrNotReady             = &Error{Code: ErrorNotReady}
	ErrNoDevice             = &Error{Code: ErrorNoDevice}
	ErrInsufficientDriver   = &Error{Code: ErrorInsufficientDriver}
	ErrNotSupported         = &Error{Code: ErrorNotSupported}
)

// NewError builds an *Error for code with the default name, as the simulated
// backend does. The real backend asks the runtime for name and description.
func NewError(fn string, code ErrorCode, desc string) *Error {
	return &Error{Code: code, Name: code.Name(), Desc: desc, Func: fn}
}

// ErrBackendUnavailable is returned (wrapped) when the chosen backend cannot
// be opened: no libcudart, no driver, or no device. Its message says how to
// choose the simulated device instead.
var ErrBackendUnavailable = errors.New("cudart: backend unavailable")
