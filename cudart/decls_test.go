package cudart

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart/internal/abi"
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

// TestConstNames checks that errors.go names each error code as the list
// in internal/abi does, which the declaration check proves against CUDA.
// (internal/cudagen checks that the list holds every constant.)
func TestConstNames(t *testing.T) {
	needSources(t, "types.go", "errors.go")
	consts := declaredConstants(t, "types.go", "errors.go")
	cnames := make(map[string]bool)
	for _, c := range abi.Consts() {
		cnames[c.CName] = true
		if strings.HasPrefix(c.CName, "cudaError") || c.CName == "cudaSuccess" {
			v, ok := consts[c.GoName]
			if assert.True(t, ok, "%s is not declared", c.GoName) {
				assert.Equal(t, c.CName, ErrorCode(v).Name(), "errors.go's name for %s", c.GoName)
			}
		}
	}
	for code, name := range codeNames {
		assert.True(t, cnames[name], "errors.go names %d %s, which abi.Consts lacks", code, name)
	}
}
