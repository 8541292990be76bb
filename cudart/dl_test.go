//go:build cgo && unix

package cudart

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDynLib(t *testing.T) {
	fake := buildFake(t, fakeNoLog)

	_, err := dlOpen(fake.path, dlNow|dlLocal|dlNoLoad)
	require.Error(t, err, "RTLD_NOLOAD finds only loaded libraries")

	lib, err := dlOpen(fake.path, dlNow|dlLocal)
	require.NoError(t, err)
	p, err := lib.lookup("cudaMalloc")
	require.NoError(t, err)
	require.NotNil(t, p)
	assert.Equal(t, fake.path, fileOf(p))

	again, err := dlOpen(fake.path, dlNow|dlLocal|dlNoLoad)
	require.NoError(t, err, "now loaded")
	q, err := again.lookup("cudaMalloc")
	require.NoError(t, err)
	assert.Equal(t, p, q, "one library, one symbol")
	require.NoError(t, again.close())

	_, err = lib.lookup("cudaNoSuchFunction")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dlsym cudaNoSuchFunction: ")
	assert.Contains(t, err.Error(), "undefined symbol: cudaNoSuchFunction")

	require.NoError(t, lib.close())
	require.NoError(t, lib.close(), "closing twice is harmless")
	_, err = lib.lookup("cudaMalloc")
	require.ErrorContains(t, err, "is closed")
	_, err = dlOpen(fake.path, dlNow|dlLocal|dlNoLoad)
	require.Error(t, err, "unloaded with its last reference")

	missing := filepath.Join(t.TempDir(), "libnothing.so")
	_, err = dlOpen(missing, dlNow)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dlopen "+missing+": ")
	assert.Contains(t, err.Error(), "No such file or directory")
	_, err = dlOpen("", dlNow)
	require.ErrorContains(t, err, "empty library name")
	assert.Empty(t, fileOf(nil))
}
