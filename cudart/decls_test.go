package cudart

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// needSources skips t when the package's source files are not in the working
// directory, as in a test binary run away from the tree (the GPU bundle);
// where any of them is present, the test runs and a missing one fails it.
func needSources(t *testing.T, files ...string) {
	t.Helper()
	var missing []string
	for _, f := range files {
		if _, err := os.Stat(f); errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, f)
		}
	}
	if len(missing) == len(files) {
		t.Skipf("the source files %s are not in the working directory (a test binary run outside the source tree?); this test reads them", strings.Join(files, ", "))
	}
}

// declaredConstants reads the integer constants of the given files of this
// package, by name. The values are literals, possibly negated.
func declaredConstants(t *testing.T, files ...string) map[string]int64 {
	t.Helper()
	fset := token.NewFileSet()
	consts := make(map[string]int64)
	for _, file := range files {
		f, err := parser.ParseFile(fset, file, nil, 0)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				require.Len(t, vs.Values, len(vs.Names), "%s: every constant needs its own value", fset.Position(vs.Pos()))
				for i, name := range vs.Names {
					v, ok := literalInt(vs.Values[i])
					if !ok {
						if _, isString := vs.Values[i].(*ast.BasicLit); isString {
							continue // a string constant: not CUDA's
						}
						t.Fatalf("%s: cannot read the value of %s; extend literalInt", fset.Position(name.Pos()), name.Name)
					}
					consts[name.Name] = v
				}
			}
		}
	}
	return consts
}

func literalInt(e ast.Expr) (int64, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.INT {
			return 0, false
		}
		v, err := strconv.ParseInt(e.Value, 0, 64)
		return v, err == nil
	case *ast.UnaryExpr:
		v, ok := literalInt(e.X)
		if e.Op == token.SUB && ok {
			return -v, true
		}
	case *ast.ParenExpr:
		return literalInt(e.X)
	}
	return 0, false
}

// TestDeclsListEveryConstant checks that Decls names every integer constant
// of types.go and errors.go, with its value, so that the declaration check
// covers them all.
func TestDeclsListEveryConstant(t *testing.T) {
	needSources(t, "types.go", "errors.go")
	consts := declaredConstants(t, "types.go", "errors.go")
	notCUDA := map[string]bool{"DefaultStream": true} // the null stream has no CUDA name

	decls := make(map[string]Decl)
	cnames := make(map[string]bool)
	for _, d := range Decls() {
		_, dup := decls[d.GoName]
		assert.False(t, dup, "%s listed twice", d.GoName)
		assert.False(t, cnames[d.CName], "%s listed twice", d.CName)
		decls[d.GoName], cnames[d.CName] = d, true
		assert.Regexp(t, `^cuda[A-Z][A-Za-z0-9]*$`, d.CName)
		assert.True(t, d.Since == 0 || d.Since > MinRuntimeVersion, "%s: Since %d", d.CName, d.Since)
		if strings.HasPrefix(d.CName, "cudaError") || d.CName == "cudaSuccess" {
			assert.Equal(t, d.CName, ErrorCode(d.Value).Name(), "errors.go's name for %s", d.GoName)
		}
	}
	for code, name := range codeNames {
		assert.True(t, cnames[name], "errors.go names %d %s, which Decls lacks", code, name)
	}
	for name, v := range consts {
		if notCUDA[name] {
			continue
		}
		d, ok := decls[name]
		if assert.True(t, ok, "Decls lacks %s", name) {
			assert.Equal(t, v, d.Value, "Decls has a value for %s (%s) that is not the constant's", name, d.CName)
		}
	}
	for name := range decls {
		_, ok := consts[name]
		assert.True(t, ok, "Decls lists %s, which types.go and errors.go do not declare", name)
	}
}

// TestFuncDecls checks FuncDecls against cuda_abi.h and itself.
func TestFuncDecls(t *testing.T) {
	needSources(t, "cuda_abi.h", "cuda.go")
	abi, err := os.ReadFile("cuda_abi.h")
	require.NoError(t, err)
	typedef := regexp.MustCompile(`typedef [^;]*\(\*(rmmgo_fn_\w+)\)\(`)
	declared := make(map[string]bool)
	for _, m := range typedef.FindAllStringSubmatch(string(abi), -1) {
		declared[m[1]] = true
	}
	used := make(map[string]bool)
	for _, d := range FuncDecls() {
		assert.True(t, declared[d.Type], "%s: cuda_abi.h declares no %s", d.Symbol, d.Type)
		used[d.Type] = true
		assert.True(t, strings.HasPrefix(d.Symbol, "cuda"), d.Symbol)
		assert.True(t, d.Before == 0 || d.Before > d.Since, "%s: empty version range", d.Symbol)
	}
	for ty := range declared {
		assert.True(t, used[ty], "cuda_abi.h declares %s, which FuncDecls does not use", ty)
	}
	// The driver functions (rmmgo_drvfn_<symbol>) are not in FuncDecls:
	// decl_check.cpp checks each of them by name.
	check, err := os.ReadFile("check/decl_check.cpp")
	require.NoError(t, err)
	drv := regexp.MustCompile(`typedef [^;]*\(\*rmmgo_drvfn_(\w+)\)\(`)
	ms := drv.FindAllStringSubmatch(string(abi), -1)
	assert.NotEmpty(t, ms, "cuda_abi.h declares cuStreamGetId")
	for _, m := range ms {
		assert.Contains(t, string(check), "RMMGO_CHECK_FUNC("+m[1]+", rmmgo_drvfn_"+m[1]+")",
			"decl_check.cpp checks the driver function %s", m[1])
	}

	// Each supported version gets exactly one shape of every function, and
	// the hint functions in exactly the shapes the backend expects.
	for _, version := range []int{12000, 12010, 12020, 12090, 13000, 13020} {
		shapes := make(map[string][]string)
		for _, d := range FuncDecls() {
			if d.AppliesTo(version) {
				shapes[d.Symbol] = append(shapes[d.Symbol], d.Type)
			}
		}
		for sym, types := range shapes {
			assert.Len(t, types, 1, "version %d: %s has shapes %v", version, sym, types)
		}
		wantPrefetch := "rmmgo_fn_cudaMemPrefetchAsync_device"
		if version >= 13000 {
			wantPrefetch = "rmmgo_fn_cudaMemPrefetchAsync_location"
		}
		assert.Equal(t, []string{wantPrefetch}, shapes["cudaMemPrefetchAsync"], "version %d", version)
		_, v2 := shapes["cudaMemPrefetchAsync_v2"]
		assert.Equal(t, version >= 12020 && version < 13000, v2, "version %d", version)
	}
}
