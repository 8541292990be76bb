package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/rmmgo/rmmgo/cudart/internal/abi"
)

// constFiles are the files of package cudart that declare CUDA's constants.
var constFiles = []string{"types.go", "errors.go"}

// constValue is an abi.Const with the value cudart's source gives it.
type constValue struct {
	abi.Const
	Value int64
}

// readConsts reads the integer constants of constFiles in dir and pairs them
// with abi.Consts. Every constant must be listed there, and every entry
// there must be declared.
func readConsts(dir string) ([]constValue, error) {
	values := make(map[string]int64)
	fset := token.NewFileSet()
	for _, name := range constFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if len(vs.Values) != len(vs.Names) {
					return nil, fmt.Errorf("%s: give every constant its own value", fset.Position(vs.Pos()))
				}
				for i, id := range vs.Names {
					v, ok := literalInt(vs.Values[i])
					if !ok {
						return nil, fmt.Errorf("%s: the value of %s is not an integer literal", fset.Position(id.Pos()), id.Name)
					}
					values[id.Name] = v
				}
			}
		}
	}

	var out []constValue
	listed := make(map[string]bool)
	for _, c := range abi.Consts() {
		v, ok := values[c.GoName]
		if !ok {
			return nil, fmt.Errorf("abi.Consts lists %s, which %v do not declare", c.GoName, constFiles)
		}
		if listed[c.GoName] {
			return nil, fmt.Errorf("abi.Consts lists %s twice", c.GoName)
		}
		listed[c.GoName] = true
		out = append(out, constValue{c, v})
	}
	for _, a := range abi.DriverAliases() {
		v, ok := values[a.GoName]
		if !ok {
			return nil, fmt.Errorf("abi.DriverAliases names %s, which %v do not declare", a.GoName, constFiles)
		}
		out = append(out, constValue{a, v})
	}
	var missing []string
	for name := range values {
		if !listed[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("abi.Consts lacks %v (with their CUDA names)", missing)
	}
	return out, nil
}

// literalInt reads an integer literal, possibly negated or in parentheses.
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

// constValueOf returns the value of the constant goName.
func constValueOf(consts []constValue, goName string) (int64, error) {
	for _, c := range consts {
		if c.GoName == goName {
			return c.Value, nil
		}
	}
	return 0, fmt.Errorf("no constant %s", goName)
}
