package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/rmmgo/rmmgo/cudart/internal/abi"
)

// funcType is one C signature: one function-pointer type, one slot of the
// function table, one trampoline. Several symbols may share it.
type funcType struct {
	name          string // abi.Func.TypeName()
	result        string
	params        []param
	keepLastError bool
	symbols       []abi.Func // the functions of this type, in abi order
}

// param is one parameter of a funcType, as abi.Func.Params gives it.
type param struct {
	decl  string // the C declaration, without marker: "void **devPtr"
	ctype string // its type: "void **"
	name  string // "devPtr"
	dir   string // "" (an argument), "out" (a result) or "in" (an argument by reference)
	value string // for out and in: the type whose address is passed, e.g. "void *"
}

// typeClass says how a C type crosses between Go and the trampolines.
type typeClass int

const (
	scalarType  typeClass = iota // as is
	enumType                     // as int32_t (every CUDA enum is 4 bytes)
	handleType                   // as uintptr_t, cast back in C
	pointerType                  // as uintptr_t, cast back in C
	structType                   // as is, by value
)

// cTypes are the C types parameters may have, besides pointers. A new type
// must be added here, with the way it crosses.
var cTypes = map[string]typeClass{
	"int":                scalarType,
	"unsigned int":       scalarType,
	"size_t":             scalarType,
	"unsigned long long": scalarType,
	"uint64_t":           scalarType,
	"RMMGO_ERR":          enumType,
	"RMMGO_CURESULT":     enumType,
	"RMMGO_DEVATTR":      enumType,
	"RMMGO_POOLATTR":     enumType,
	"RMMGO_MEMCPYKIND":   enumType,
	"RMMGO_ADVISE":       enumType,
	"RMMGO_ENTRYSTATUS":  enumType,
	"RMMGO_STREAM":       handleType,
	"RMMGO_EVENT":        handleType,
	"RMMGO_POOL":         handleType,
	"RMMGO_LOCATION":     structType,
	"RMMGO_POOLPROPS":    structType,
	"RMMGO_PTRATTR":      structType,
	"RMMGO_GRANFLAGS":    enumType,
	"RMMGO_DEVPTR":       scalarType, // CUdeviceptr: unsigned long long
	"RMMGO_MEMHANDLE":    scalarType, // CUmemGenericAllocationHandle: unsigned long long
	"RMMGO_ALLOCPROP":    structType,
	"RMMGO_ACCESSDESC":   structType,
	"RMMGO_CULOCATION":   structType,
}

// classOf classifies a C type ("const" and all).
func classOf(ctype string) (typeClass, error) {
	t := strings.TrimPrefix(ctype, "const ")
	if strings.HasSuffix(t, "*") {
		base := strings.TrimPrefix(strings.TrimRight(t, "* "), "const ")
		if _, known := cTypes[base]; !known && base != "void" && base != "char" {
			return 0, fmt.Errorf("unknown C type %q (add it to cTypes)", ctype)
		}
		return pointerType, nil
	}
	c, ok := cTypes[t]
	if !ok {
		return 0, fmt.Errorf("unknown C type %q (add it to cTypes)", ctype)
	}
	return c, nil
}

// crossing is the type a value of ctype has on the Go side of a trampoline.
func crossing(ctype string) (string, error) {
	c, err := classOf(ctype)
	switch {
	case err != nil:
		return "", err
	case c == pointerType || c == handleType:
		return "uintptr_t", nil
	case c == enumType:
		return "int32_t", nil
	}
	return strings.TrimPrefix(ctype, "const "), nil
}

// isErrorResult: the function returns a status (cudaError_t or CUresult).
func isErrorResult(result string) bool { return result == "RMMGO_ERR" || result == "RMMGO_CURESULT" }

var (
	markerRE = regexp.MustCompile(`^(out|in)(\(([^)]*)\))?\s+(.*)$`)
	declRE   = regexp.MustCompile(`^(.*[\s*])([A-Za-z_][A-Za-z0-9_]*)$`)
)

// parseParam reads one parameter of abi.Func.Params.
func parseParam(s string) (param, error) {
	s = strings.Join(strings.Fields(s), " ")
	var p param
	if m := markerRE.FindStringSubmatch(s); m != nil {
		p.dir, p.value, s = m[1], m[3], m[4]
	}
	m := declRE.FindStringSubmatch(s)
	if m == nil {
		return p, fmt.Errorf("cannot read the parameter %q", s)
	}
	p.decl, p.ctype, p.name = s, strings.TrimSpace(m[1]), m[2]
	if p.name == "r" || p.name == "tbl" {
		return p, fmt.Errorf("parameter %q: the trampolines use that name", s)
	}
	if p.dir == "" {
		if p.value != "" {
			return p, fmt.Errorf("parameter %q: a type in parentheses needs out or in", s)
		}
		_, err := classOf(p.ctype)
		return p, err
	}
	if !strings.HasSuffix(p.ctype, "*") {
		return p, fmt.Errorf("parameter %q: %s needs a pointer", s, p.dir)
	}
	pointee := strings.TrimSpace(strings.TrimSuffix(p.ctype, "*"))
	switch {
	case p.value == "" && pointee == "void":
		return p, fmt.Errorf("parameter %q: say the type of the value: %s(T) void *%s", s, p.dir, p.name)
	case p.value == "":
		p.value = strings.TrimPrefix(pointee, "const ")
	case pointee != "void":
		return p, fmt.Errorf("parameter %q: a type in parentheses is for void * only", s)
	}
	if p.dir == "out" && strings.HasPrefix(pointee, "const ") {
		return p, fmt.Errorf("parameter %q: a result cannot be const", s)
	}
	c, err := classOf(p.value)
	if err == nil && p.dir == "in" && (c == pointerType || c == handleType) {
		err = fmt.Errorf("parameter %q: pass a pointer or handle as an argument, not by reference", s)
	}
	return p, err
}

// parseFuncs groups abi.Funcs by type and reads their parameters.
func parseFuncs() ([]*funcType, error) {
	var types []*funcType
	byName := make(map[string]*funcType)
	symbols := make(map[string]bool)
	for _, f := range abi.Funcs() {
		key := fmt.Sprintf("%s/%d/%d", f.Symbol, f.Since, f.Before)
		if symbols[key] {
			return nil, fmt.Errorf("%s is listed twice for the same versions", f.Symbol)
		}
		symbols[key] = true
		if f.DriverABI != 0 && f.ResultType() != "RMMGO_CURESULT" {
			return nil, fmt.Errorf("%s: a driver function returns RMMGO_CURESULT", f.Symbol)
		}
		t, seen := byName[f.TypeName()]
		if seen {
			if f.Params != "" || f.ResultType() != t.result || f.KeepLastError != t.keepLastError {
				return nil, fmt.Errorf("%s: type %s is declared by %s; give no Params, and the same Result and KeepLastError",
					f.Symbol, t.name, t.symbols[0].Symbol)
			}
			t.symbols = append(t.symbols, f)
			continue
		}
		if f.Params == "" {
			return nil, fmt.Errorf("%s: no Params (write \"void\" for none)", f.Symbol)
		}
		t = &funcType{name: f.TypeName(), result: f.ResultType(), keepLastError: f.KeepLastError, symbols: []abi.Func{f}}
		if _, err := classOf(t.result); err != nil && t.result != "const char *" {
			return nil, fmt.Errorf("%s: result: %w", f.Symbol, err)
		}
		if f.Params != "void" {
			for _, s := range strings.Split(f.Params, ",") {
				p, err := parseParam(s)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", f.Symbol, err)
				}
				t.params = append(t.params, p)
			}
		}
		if t.hasResults() && !isErrorResult(t.result) {
			return nil, fmt.Errorf("%s: a function with out parameters must return a status", f.Symbol)
		}
		byName[t.name] = t
		types = append(types, t)
	}
	return types, nil
}

func (t *funcType) hasResults() bool {
	for _, p := range t.params {
		if p.dir == "out" {
			return true
		}
	}
	return false
}

// declare writes a C declaration of name with type ctype.
func declare(ctype, name string) string {
	if strings.HasSuffix(ctype, "*") {
		return ctype + name
	}
	return ctype + " " + name
}

// versions describes the runtime versions a function applies to.
func versions(f abi.Func) string {
	v := func(n int) string { return fmt.Sprintf("%d.%d", n/1000, n%1000/10) }
	var s string
	switch {
	case f.Since > 0 && f.Before > 0:
		s = "CUDA " + v(f.Since) + " until " + v(f.Before)
	case f.Since > 0:
		s = "CUDA " + v(f.Since) + " and later"
	case f.Before > 0:
		s = "before CUDA " + v(f.Before)
	}
	if f.DriverABI > 0 {
		if s != "" {
			s += ", "
		}
		s += "the driver's, in its " + v(f.DriverABI) + " ABI, through cudaGetDriverEntryPointByVersion"
	}
	if f.Optional {
		if s != "" {
			s += ", "
		}
		s += "may be missing"
	}
	return s
}

// comment names the functions of t, with their versions, where the type's
// name does not say it all.
func (t *funcType) comment() string {
	if f := t.symbols[0]; len(t.symbols) == 1 && f.Symbol == t.name && versions(f) == "" {
		return ""
	}
	var parts []string
	for _, f := range t.symbols {
		if v := versions(f); v != "" {
			parts = append(parts, f.Symbol+" ("+v+")")
		} else {
			parts = append(parts, f.Symbol)
		}
	}
	return "/* " + strings.Join(parts, "; ") + " */\n"
}

// typedef is t's function-pointer type.
func (t *funcType) typedef() string {
	decls := make([]string, len(t.params))
	for i, p := range t.params {
		decls[i] = p.decl
	}
	if len(decls) == 0 {
		decls = []string{"void"}
	}
	return fmt.Sprintf("typedef %s(*rmmgo_fn_%s)(%s);\n",
		declare(t.result, ""), t.name, strings.Join(decls, ", "))
}

// trampoline is the C function through which cgo calls t's slot.
func (t *funcType) trampoline() (string, error) {
	var (
		b              strings.Builder
		args           = []string{"uintptr_t tbl"}
		call           []string
		locals, stores []string
		fields         []string
	)
	for _, p := range t.params {
		switch p.dir {
		case "out":
			field, err := crossing(p.value)
			if err != nil {
				return "", err
			}
			fields = append(fields, declare(field, p.name))
			locals = append(locals, declare(p.value, p.name))
			call = append(call, "&"+p.name)
			if field == "uintptr_t" {
				stores = append(stores, fmt.Sprintf("r.%s = (uintptr_t)%s;", p.name, p.name))
			} else {
				stores = append(stores, fmt.Sprintf("r.%s = %s;", p.name, p.name))
			}
		case "in":
			args = append(args, declare(p.value, p.name))
			call = append(call, "&"+p.name)
		default:
			cross, err := crossing(p.ctype)
			if err != nil {
				return "", err
			}
			args = append(args, declare(cross, p.name))
			if cross == "uintptr_t" {
				call = append(call, "("+p.ctype+")"+p.name)
			} else {
				call = append(call, p.name)
			}
		}
	}
	expr := fmt.Sprintf("RMMGO_FN(tbl, %s)(%s)", t.name, strings.Join(call, ", "))
	if t.result == "RMMGO_ERR" && !t.keepLastError {
		expr = "rmmgo_done(tbl, " + expr + ")"
	}
	sig := strings.Join(args, ", ")

	b.WriteString(t.comment())
	if len(fields) == 0 {
		ret := t.result
		if isErrorResult(ret) {
			ret = "int32_t"
		}
		fmt.Fprintf(&b, "static inline %s(%s) {\n\treturn %s;\n}\n",
			declare(ret, "rmmgo_call_"+t.name), sig, expr)
		return b.String(), nil
	}
	ret := "rmmgo_ret_" + t.name
	b.WriteString("typedef struct {\n")
	for _, f := range fields {
		fmt.Fprintf(&b, "\t%s;\n", f)
	}
	fmt.Fprintf(&b, "\tint32_t err;\n} %s;\n", ret)
	fmt.Fprintf(&b, "static inline %s rmmgo_call_%s(%s) {\n", ret, t.name, sig)
	fmt.Fprintf(&b, "\t%s r;\n", ret)
	for _, l := range locals {
		fmt.Fprintf(&b, "\t%s;\n", l)
	}
	b.WriteString("\tmemset(&r, 0, sizeof r);\n")
	for _, p := range t.params {
		if p.dir == "out" {
			fmt.Fprintf(&b, "\tmemset(&%s, 0, sizeof %s);\n", p.name, p.name)
		}
	}
	fmt.Fprintf(&b, "\tr.err = %s;\n", expr)
	for _, s := range stores {
		fmt.Fprintf(&b, "\t%s\n", s)
	}
	b.WriteString("\treturn r;\n}\n")
	return b.String(), nil
}
