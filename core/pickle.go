package core

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"sort"
)

// pickleValue writes v as a Python pickle (protocol 2, which every Python 3
// reads): maps with string keys become dicts (keys sorted, so the output is
// stable), slices lists, strings str, integers int, bools and nil their
// Python values, float64 float. Enough for memory snapshots, no more.
func pickleValue(v any) []byte {
	b := []byte{0x80, 2} // PROTO 2
	b = pickleAppend(b, v)
	return append(b, '.') // STOP
}

func pickleAppend(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, 'N')
	case bool:
		if x {
			return append(b, 0x88)
		}
		return append(b, 0x89)
	case string:
		b = append(b, 'X')
		b = binary.LittleEndian.AppendUint32(b, uint32(len(x)))
		return append(b, x...)
	case int:
		return pickleInt(b, big.NewInt(int64(x)))
	case int64:
		return pickleInt(b, big.NewInt(x))
	case uint64:
		return pickleInt(b, new(big.Int).SetUint64(x))
	case float64:
		b = append(b, 'G')
		return binary.BigEndian.AppendUint64(b, math.Float64bits(x))
	case []any:
		b = append(b, ']')
		if len(x) == 0 {
			return b
		}
		b = append(b, '(')
		for _, e := range x {
			b = pickleAppend(b, e)
		}
		return append(b, 'e') // APPENDS
	case map[string]any:
		b = append(b, '}')
		if len(x) == 0 {
			return b
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, '(')
		for _, k := range keys {
			b = pickleAppend(b, k)
			b = pickleAppend(b, x[k])
		}
		return append(b, 'u') // SETITEMS
	}
	panic(fmt.Sprintf("pickle: unsupported %T", v))
}

// pickleInt writes n: BININT for 32-bit values, else LONG1 (little-endian
// two's complement).
func pickleInt(b []byte, n *big.Int) []byte {
	if n.IsInt64() && n.Int64() >= math.MinInt32 && n.Int64() <= math.MaxInt32 {
		b = append(b, 'J')
		return binary.LittleEndian.AppendUint32(b, uint32(int32(n.Int64())))
	}
	// Two's complement, little endian, with room for the sign bit.
	nbytes := (n.BitLen() + 8) / 8
	mod := new(big.Int).Lsh(big.NewInt(1), uint(8*nbytes))
	v := new(big.Int).Set(n)
	if v.Sign() < 0 {
		v.Add(v, mod)
	}
	be := v.FillBytes(make([]byte, nbytes))
	b = append(b, 0x8a, byte(nbytes))
	for i := len(be) - 1; i >= 0; i-- {
		b = append(b, be[i])
	}
	return b
}
