package cudart

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestErrorMessage(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Code: ErrorMemoryAllocation, Name: "cudaErrorMemoryAllocation", Desc: "out of memory", Func: "cudaMalloc"},
			"cudaMalloc: cudaErrorMemoryAllocation (out of memory)"},
		{&Error{Code: ErrorInvalidValue}, "cudaErrorInvalidValue"},
		{&Error{Code: ErrorNotReady, Func: "cudaStreamQuery"}, "cudaStreamQuery: cudaErrorNotReady"},
		{&Error{Code: 9999, Desc: "mystery"}, "cudaError(9999) (mystery)"},
		{&Error{Code: ErrorInvalidValue, Name: "customName"}, "customName"},
		{NewError("cudaFree", ErrorInvalidValue, "invalid argument"), "cudaFree: cudaErrorInvalidValue (invalid argument)"},
		{NewError("", ErrorInvalidMemcpyDirection, ""), "cudaErrorInvalidMemcpyDirection"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.err.Error())
	}
}

func TestNewError(t *testing.T) {
	e := NewError("cudaMallocAsync", ErrorNotSupported, "operation not supported")
	assert.Equal(t, &Error{Code: ErrorNotSupported, Name: "cudaErrorNotSupported", Desc: "operation not supported", Func: "cudaMallocAsync"}, e)
}

func TestErrorCodeNames(t *testing.T) {
	tests := []struct {
		code ErrorCode
		name string
		num  int32
	}{
		{Success, "cudaSuccess", 0},
		{ErrorInvalidValue, "cudaErrorInvalidValue", 1},
		{ErrorMemoryAllocation, "cudaErrorMemoryAllocation", 2},
		{ErrorInitializationError, "cudaErrorInitializationError", 3},
		{ErrorCudartUnloading, "cudaErrorCudartUnloading", 4},
		{ErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", 17},
		{ErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", 21},
		{ErrorInsufficientDriver, "cudaErrorInsufficientDriver", 35},
		{ErrorNoDevice, "cudaErrorNoDevice", 100},
		{ErrorInvalidDevice, "cudaErrorInvalidDevice", 101},
		{ErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", 400},
		{ErrorNotReady, "cudaErrorNotReady", 600},
		{ErrorIllegalAddress, "cudaErrorIllegalAddress", 700},
		{ErrorHostMemoryAlreadyRegistered, "cudaErrorHostMemoryAlreadyRegistered", 712},
		{ErrorNotSupported, "cudaErrorNotSupported", 801},
		{ErrorCode(-5), "cudaError(-5)", -5},
		{ErrorCode(12345), "cudaError(12345)", 12345},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.num, int32(tt.code))
		assert.Equal(t, tt.name, tt.code.Name())
		assert.Equal(t, tt.name, tt.code.String())
		assert.Equal(t, tt.name, fmt.Sprint(tt.code))
	}
}

func TestErrorsIsMatchesByCode(t *testing.T) {
	oom := fmt.Errorf("allocating the pool: %w", NewError("cudaMalloc", ErrorMemoryAllocation, "out of memory"))
	sentinels := map[*Error]ErrorCode{
		ErrInvalidValue:         ErrorInvalidValue,
		ErrMemoryAllocation:     ErrorMemoryAllocation,
		ErrInvalidDevice:        ErrorInvalidDevice,
		ErrInvalidDevicePointer: ErrorInvalidDevicePointer,
		ErrInvalidResource:      ErrorInvalidResourceHandle,
		ErrNotReady:             ErrorNotReady,
		ErrNoDevice:             ErrorNoDevice,
		ErrInsufficientDriver:   ErrorInsufficientDriver,
		ErrNotSupported:         ErrorNotSupported,
	}
	for sentinel, code := range sentinels {
		require.Equal(t, code, sentinel.Code)
		assert.Equal(t, code == ErrorMemoryAllocation, errors.Is(oom, sentinel), "%v", sentinel)
		// Any *Error with the code matches, whatever its other fields.
		assert.True(t, errors.Is(fmt.Errorf("x: %w", &Error{Code: code, Func: "f", Desc: "d"}), sentinel))
	}
	assert.True(t, errors.Is(oom, &Error{Code: ErrorMemoryAllocation, Desc: "another description"}))
	assert.False(t, errors.Is(oom, errors.New("out of memory")))
	assert.False(t, errors.Is(oom, ErrBackendUnavailable))
	assert.False(t, NewError("f", ErrorInvalidValue, "").Is(nil))
	// Matching also works through a wrapped target.
	assert.True(t, NewError("f", ErrorNotReady, "").Is(fmt.Errorf("wrapped: %w", ErrNotReady)))

	var e *Error
	require.True(t, errors.As(oom, &e))
	assert.Equal(t, "cudaMalloc", e.Func)
	assert.Equal(t, ErrorMemoryAllocation, e.Code)
}

func TestErrBackendUnavailableWraps(t *testing.T) {
	err := fmt.Errorf("%w: no driver", ErrBackendUnavailable)
	assert.ErrorIs(t, err, ErrBackendUnavailable)
	assert.Equal(t, "cudart: backend unavailable: no driver", err.Error())
}
