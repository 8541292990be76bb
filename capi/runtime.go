package main

import (
	"errors"
	"fmt"

	"github.com/rmmgo/rmmgo/cudart"
)

// The CUDA runtime the library runs on, and its devices.

// runtimeOrFail returns the process's CUDA runtime.
func runtimeOrFail() (cudart.Runtime, error) {
	r, err := cudart.Default()
	if err != nil {
		if !errors.Is(err, cudart.ErrBackendUnavailable) {
			err = fmt.Errorf("%w: %w", cudart.ErrBackendUnavailable, err)
		}
		return nil, err
	}
	return r, nil
}

// checkDevice validates a device id.
func checkDevice(r cudart.Runtime, dev int) error {
	n, err := r.GetDeviceCount()
	if err != nil {
		return err
	}
	if dev < 0 || dev >= n {
		return fmt.Errorf("%w: device %d does not exist (there are %d)", errInvalidDevice, dev, n)
	}
	return nil
}

// currentDevice is the calling thread's current device.
func currentDevice() (int, error) {
	r, err := runtimeOrFail()
	if err != nil {
		return 0, err
	}
	return r.GetDevice()
}

// validDevice checks that dev exists.
func validDevice(dev int) error {
	r, err := runtimeOrFail()
	if err != nil {
		return err
	}
	return checkDevice(r, dev)
}
