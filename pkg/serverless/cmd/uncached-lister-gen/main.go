/*
Copyright The Foo Operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command uncached-lister-gen writes, for each generated lister it is
// named (a lister-gen package and a kind), the uncached.Lister that
// answers it from the API server, and a constructor that infers the types
// from a typed client's method:
//
//	//go:generate go run github.com/frugal-operator/foo-operator/pkg/serverless/cmd/uncached-lister-gen k8s.io/client-go/listers/apps/v1.Deployment k8s.io/client-go/listers/core/v1.Namespace
//
// writes zz_generated.uncached_listers.go in the package of the directive,
// with
//
//	func newDeploymentLister[C uncached.Client[*appsv1.Deployment, *appsv1.DeploymentList]](ctx context.Context, client func(namespace string) C) appsv1listers.DeploymentLister
//	func newNamespaceLister[C uncached.Client[*corev1.Namespace, *corev1.NamespaceList]](ctx context.Context, client func() C) corev1listers.NamespaceLister
//
// called as newDeploymentLister(ctx, kc.AppsV1().Deployments) and
// newNamespaceLister(ctx, kc.CoreV1().Namespaces). It reads the listers'
// sources (found with go list, from the module of the working directory),
// and refuses a kind whose lister has methods an uncached.Lister cannot
// answer (a non-empty ListerExpansion).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"unicode"
)

const (
	usage = `usage: //go:generate go run .../uncached-lister-gen [-header FILE] LISTERS-PACKAGE.Kind...`
	out   = "zz_generated.uncached_listers.go"
)

func main() {
	header := flag.String("header", "", "a file whose text starts the file written (a license header)")
	flag.Usage = func() { fmt.Fprintln(os.Stderr, usage); flag.PrintDefaults() }
	flag.Parse()
	if err := run(os.Getenv("GOPACKAGE"), *header, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "uncached-lister-gen:", err)
		os.Exit(1)
	}
}

func run(pkg, header string, kinds []string) error {
	if pkg == "" || len(kinds) == 0 {
		return errors.New(usage + " ($GOPACKAGE, which go generate sets, names the package written)")
	}
	var head []byte
	if header != "" {
		var err error
		if head, err = os.ReadFile(header); err != nil {
			return err
		}
	}
	var listers []lister
	for _, k := range kinds {
		l, err := find(k)
		if err != nil {
			return err
		}
		listers = append(listers, l)
	}
	src, err := generate(pkg, head, listers)
	if err != nil {
		return err
	}
	return os.WriteFile(out, src, 0o644)
}

// lister is what the generated code needs of one generated lister.
type lister struct {
	Kind       string // Deployment
	Plural     string // Deployments: its method that returns the namespace's lister; "" if cluster-scoped
	ListersPkg string // k8s.io/client-go/listers/apps/v1
	TypesPkg   string // k8s.io/api/apps/v1
	// the import names the generated file gives the two packages
	Listers, Types string
}

// find reads KindLister in the sources of a lister-gen package, named as
// PACKAGE.Kind.
func find(arg string) (lister, error) {
	i := strings.LastIndex(arg, ".")
	if i <= 0 || i == len(arg)-1 || strings.HasSuffix(arg[:i], "/") {
		return lister{}, fmt.Errorf("%q: want LISTERS-PACKAGE.Kind, as k8s.io/client-go/listers/apps/v1.Deployment", arg)
	}
	l := lister{ListersPkg: arg[:i], Kind: arg[i+1:]}
	// The directory, then the files that build.
	listed, err := exec.Command("go", "list", "-f", "{{.Dir}}{{range .GoFiles}}\n{{.}}{{end}}", l.ListersPkg).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return lister{}, fmt.Errorf("go list %s: %s", l.ListersPkg, bytes.TrimSpace(exit.Stderr))
		}
		return lister{}, fmt.Errorf("go list %s: %w", l.ListersPkg, err)
	}
	lines := strings.Split(strings.TrimSpace(string(listed)), "\n")
	fset := token.NewFileSet()
	var iface, expansion *ast.InterfaceType
	var file *ast.File
	for _, name := range lines[1:] {
		f, err := parser.ParseFile(fset, filepath.Join(lines[0], name), nil, 0)
		if err != nil {
			return lister{}, err
		}
		for name, it := range interfaces(f) {
			switch name {
			case l.Kind + "Lister":
				iface, file = it, f
			case l.Kind + "ListerExpansion":
				expansion = it
			}
		}
	}
	if iface == nil {
		return lister{}, fmt.Errorf("%s has no %sLister", l.ListersPkg, l.Kind)
	}
	if expansion != nil && len(expansion.Methods.List) > 0 {
		return lister{}, fmt.Errorf("%s.%sListerExpansion has methods an uncached lister does not answer", l.ListersPkg, l.Kind)
	}
	for _, m := range iface.Methods.List {
		fn, ok := m.Type.(*ast.FuncType)
		if !ok || len(m.Names) != 1 || fn.Results == nil || len(fn.Results.List) == 0 {
			continue
		}
		switch name := m.Names[0].Name; {
		case name == "List":
			if l.TypesPkg, err = elementPackage(file, fn, l.Kind); err != nil {
				return lister{}, fmt.Errorf("%s.%sLister: %w", l.ListersPkg, l.Kind, err)
			}
		case isIdent(fn.Results.List[0].Type, l.Kind+"NamespaceLister"):
			l.Plural = name
		}
	}
	if l.TypesPkg == "" {
		return lister{}, fmt.Errorf("%s.%sLister has no List method", l.ListersPkg, l.Kind)
	}
	return l, nil
}

// interfaces returns the interface types a file declares, by name.
func interfaces(f *ast.File) map[string]*ast.InterfaceType {
	out := map[string]*ast.InterfaceType{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, s := range g.Specs {
			if ts, ok := s.(*ast.TypeSpec); ok {
				if it, ok := ts.Type.(*ast.InterfaceType); ok {
					out[ts.Name.Name] = it
				}
			}
		}
	}
	return out
}

// elementPackage returns the import path of the package of Kind, from a
// List method that returns []*pkg.Kind.
func elementPackage(f *ast.File, fn *ast.FuncType, kind string) (string, error) {
	wrong := fmt.Errorf("List does not return []*<package>.%s", kind)
	slice, ok := fn.Results.List[0].Type.(*ast.ArrayType)
	if !ok {
		return "", wrong
	}
	star, ok := slice.Elt.(*ast.StarExpr)
	if !ok {
		return "", wrong
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != kind {
		return "", wrong
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", wrong
	}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		if im.Name != nil && im.Name.Name == x.Name || im.Name == nil && path.Base(p) == x.Name {
			return p, nil
		}
	}
	return "", wrong
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// generate returns the formatted file.
func generate(pkg string, header []byte, listers []lister) ([]byte, error) {
	names := map[string]string{} // import path → name
	taken := map[string]bool{"context": true, "uncached": true}
	name := func(p, suffix string) string {
		if n, ok := names[p]; ok {
			return n
		}
		n := importName(p) + suffix
		for i := 2; taken[n]; i++ {
			n = fmt.Sprintf("%s%s%d", importName(p), suffix, i)
		}
		taken[n], names[p] = true, n
		return n
	}
	seen := map[string]bool{}
	for i := range listers {
		l := &listers[i]
		if seen[l.Kind] {
			return nil, fmt.Errorf("two listers of kind %s: the generated names would clash", l.Kind)
		}
		seen[l.Kind] = true
		l.Types, l.Listers = name(l.TypesPkg, ""), name(l.ListersPkg, "listers")
	}
	imports := slices.Sorted(maps.Keys(names))
	var b bytes.Buffer
	b.Write(header)
	err := file.Execute(&b, struct {
		Package string
		Imports []string
		Names   map[string]string
		Listers []lister
	}{pkg, imports, names, listers})
	if err != nil {
		return nil, err
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("formatting the generated code: %w\n%s", err, b.Bytes())
	}
	return src, nil
}

// importName names a package by its last two path elements when the last
// is a version (apps/v1 → appsv1), else by the last.
func importName(p string) string {
	base, dir := path.Base(p), path.Base(path.Dir(p))
	n := base
	if len(base) > 1 && base[0] == 'v' && unicode.IsDigit(rune(base[1])) {
		n = dir + base
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return -1
	}, n)
}

func lowerFirst(s string) string { return strings.ToLower(s[:1]) + s[1:] }

var file = template.Must(template.New("file").Funcs(template.FuncMap{"lower": lowerFirst}).Parse(`
// Code generated by uncached-lister-gen. DO NOT EDIT.

package {{.Package}}

import (
	"context"

{{range .Imports}}	{{index $.Names .}} "{{.}}"
{{end}}
	"github.com/frugal-operator/foo-operator/pkg/serverless/uncached"
)
{{range .Listers}}{{$t := printf "*%s.%s, *%s.%sList" .Types .Kind .Types .Kind}}
{{- if .Plural}}
// {{lower .Kind}}Lister is the generated {{.Listers}}.{{.Kind}}Lister, answered by the API server.
type {{lower .Kind}}Lister struct {
	uncached.Lister[{{$t}}]
}

// new{{.Kind}}Lister returns the {{.Kind}}Lister whose requests live as long as ctx,
// reading through client, the typed client's method that takes a namespace.
func new{{.Kind}}Lister[C uncached.Client[{{$t}}]](ctx context.Context, client func(namespace string) C) {{.Listers}}.{{.Kind}}Lister {
	return {{lower .Kind}}Lister{uncached.New[{{$t}}](ctx, client)}
}

// {{.Plural}} returns the lister of one namespace.
func (l {{lower .Kind}}Lister) {{.Plural}}(namespace string) {{.Listers}}.{{.Kind}}NamespaceLister {
	return l.In(namespace)
}
{{else}}
// new{{.Kind}}Lister returns the generated {{.Listers}}.{{.Kind}}Lister, answered by the API
// server, whose requests live as long as ctx, reading through client, the
// typed client's method of the cluster-scoped kind.
func new{{.Kind}}Lister[C uncached.Client[{{$t}}]](ctx context.Context, client func() C) {{.Listers}}.{{.Kind}}Lister {
	return uncached.New[{{$t}}](ctx, func(string) C { return client() })
}
{{end}}{{end}}`))
