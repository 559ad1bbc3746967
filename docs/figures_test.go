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

// Package docs holds the user documentation; its tests check that every
// measured figure in the docs' tables is in the results run they cite, and
// that every Go block of the docs is code of the repository (code_test.go).
//
// The convention the test enforces:
//
//   - A table's figures come from the one bench/results run linked in the
//     paragraph right before it (the non-blank lines above the table).
//   - In README.md and docs/performance.md every table with a number in its
//     data cells must cite a run; elsewhere a table is checked if it cites
//     one. Measured figures belong in those two files; others link there.
//   - A figure is a number in a data cell (the header row and the first
//     column, which names the row, are not checked; nor is inline code or
//     a link's target, nor a number joined to a letter, as in p50 or 1st).
//     It must appear in the run's results.md as a number of its own: the
//     same digits, thousands separators dropped. A figure written with %
//     or × must appear with that unit there (a space before it or not),
//     since the results write ratios and shares that way; other units are
//     in the results' column headers, so only the number is compared.
//   - Every link to bench/results names a run that exists, and every run
//     in bench/results is linked from README.md, DEVELOPMENT.md,
//     CHANGELOG.md, bench/README.md or docs/*.md.
package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

const root = ".."

// strict files: every table with figures must cite a run.
var strict = map[string]bool{"README.md": true, "docs/performance.md": true}

// docFiles are the documents the test reads, relative to the repository's root.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "DEVELOPMENT.md", "CHANGELOG.md", "bench/README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range more {
		files = append(files, filepath.ToSlash(strings.TrimPrefix(f, root+string(filepath.Separator))))
	}
	return files
}

// resultsLink matches a markdown link target that points into bench/results:
// group 1 is the target, group 2 the run's folder name.
var resultsLink = regexp.MustCompile(`\]\(([^)\s]*bench/results/([^/)\s]+)[^)\s]*)\)`)

// link is one link to a results run, as written in a document.
type link struct {
	target, run string
	line        int
}

func resultsLinks(text string) []link {
	var links []link
	for i, l := range strings.Split(text, "\n") {
		for _, m := range resultsLink.FindAllStringSubmatch(l, -1) {
			links = append(links, link{target: m[1], run: m[2], line: i + 1})
		}
	}
	return links
}

// table is a markdown table and the paragraph right before it.
type table struct {
	line      int // of its header row, from 1
	paragraph string
	rows      [][]string // the data rows' cells, the header and delimiter rows left out
}

var delimiterRow = regexp.MustCompile(`^\|(\s*:?-+:?\s*\|)+\s*$`)

// tables finds the tables of a markdown text outside code fences.
func tables(text string) []table {
	lines := strings.Split(text, "\n")
	var out []table
	fenced := false
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(l, "|") || i+1 >= len(lines) || !delimiterRow.MatchString(strings.TrimSpace(lines[i+1])) {
			continue
		}
		tb := table{line: i + 1}
		// The paragraph before: skip blank lines, then take the non-blank ones.
		j := i - 1
		for j >= 0 && strings.TrimSpace(lines[j]) == "" {
			j--
		}
		var para []string
		for ; j >= 0 && strings.TrimSpace(lines[j]) != "" && !strings.HasPrefix(strings.TrimSpace(lines[j]), "|"); j-- {
			para = append([]string{lines[j]}, para...)
		}
		tb.paragraph = strings.Join(para, "\n")
		i += 2
		for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
			tb.rows = append(tb.rows, cells(lines[i]))
		}
		out = append(out, tb)
	}
	return out
}

// cells splits a table row, keeping escaped pipes and pipes in code spans.
func cells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	row = strings.TrimSuffix(row, "|")
	var out []string
	var cur strings.Builder
	code := false
	for i := 0; i < len(row); i++ {
		c := row[i]
		switch {
		case c == '\\' && i+1 < len(row) && row[i+1] == '|':
			cur.WriteByte('|')
			i++
		case c == '`':
			code = !code
			cur.WriteByte(c)
		case c == '|' && !code:
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(out, strings.TrimSpace(cur.String()))
}

var (
	codeSpan   = regexp.MustCompile("`[^`]*`")
	linkTarget = regexp.MustCompile(`\]\([^)]*\)`)
	// number: digits with an optional thousands grouping and decimals,
	// then an optional unit (% or ×) after optional spaces.
	number = regexp.MustCompile(`\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?`)
)

// figures returns the figures of a text, each as its digits (thousands
// separators dropped) followed by its unit if it is % or ×.
func figures(text string) []string {
	text = codeSpan.ReplaceAllString(text, " ")
	text = linkTarget.ReplaceAllString(text, "]")
	var out []string
	for _, loc := range number.FindAllStringIndex(text, -1) {
		start, end := loc[0], loc[1]
		if start > 0 {
			prev, _ := utf8.DecodeLastRuneInString(text[:start])
			if unicode.IsLetter(prev) || unicode.IsDigit(prev) || strings.ContainsRune("._-", prev) {
				continue // part of a name, a version or a date
			}
		}
		rest := text[end:]
		if next, _ := utf8.DecodeRuneInString(rest); unicode.IsLetter(next) || next == '_' {
			continue // an ordinal or a name: 1st, 2xx
		}
		if strings.HasPrefix(rest, ".") && len(rest) > 1 && unicode.IsDigit(rune(rest[1])) {
			continue // a version: 1.35.4
		}
		f := strings.ReplaceAll(text[start:end], ",", "")
		trimmed := strings.TrimLeft(rest, " \u00a0")
		switch {
		case strings.HasPrefix(trimmed, "%"):
			f += "%"
		case strings.HasPrefix(trimmed, "×"):
			f += "×"
		}
		out = append(out, f)
	}
	return out
}

// figureSet holds a results text's figures, each with its unit if it has
// one and as a bare number: a figure of the docs written with % or × must
// match the first, any other the second.
func figureSet(text string) map[string]bool {
	set := map[string]bool{}
	for _, f := range figures(text) {
		set[f] = true
		set[strings.TrimRight(f, "%×")] = true
	}
	return set
}

// checkTables returns what is wrong with the tables of one document: the
// figures not in the run each table cites, and the tables that must cite
// one and do not. readResults returns a run's results.md.
func checkTables(name, text string, mustCite bool, readResults func(run string) (string, error)) []string {
	var problems []string
	for _, tb := range tables(text) {
		var figs []string
		for _, row := range tb.rows {
			for _, c := range row[1:] {
				figs = append(figs, figures(c)...)
			}
		}
		runs := map[string]bool{}
		for _, l := range resultsLinks(tb.paragraph) {
			runs[l.run] = true
		}
		switch {
		case len(runs) == 0:
			if mustCite && len(figs) > 0 {
				problems = append(problems, fmt.Sprintf("%s:%d: a table of figures (%s, ...) cites no bench/results run in the paragraph before it", name, tb.line, figs[0]))
			}
			continue
		case len(runs) > 1:
			problems = append(problems, fmt.Sprintf("%s:%d: the paragraph before the table cites %d runs; a table's figures come from one", name, tb.line, len(runs)))
			continue
		}
		var run string
		for r := range runs {
			run = r
		}
		results, err := readResults(run)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: %v", name, tb.line, err))
			continue
		}
		set := figureSet(results)
		for _, f := range figs {
			if !set[f] {
				problems = append(problems, fmt.Sprintf("%s:%d: %q is not in bench/results/%s/results.md", name, tb.line, f, run))
			}
		}
	}
	return problems
}

func readResults(run string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "bench", "results", run, "results.md"))
	if err != nil {
		return "", fmt.Errorf("the cited run %s has no results.md: %w", run, err)
	}
	return string(b), nil
}

func TestTableFiguresAreInTheirResults(t *testing.T) {
	for _, name := range docFiles(t) {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range checkTables(name, string(b), strict[name], readResults) {
			t.Error(p)
		}
	}
}

func TestResultsLinksAndRunsMatch(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join(root, "bench", "results"))
	if err != nil {
		t.Fatal(err)
	}
	cited := map[string]bool{}
	for _, name := range docFiles(t) {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range resultsLinks(string(b)) {
			cited[l.run] = true
			target := filepath.Join(root, filepath.Dir(name), filepath.FromSlash(strings.SplitN(l.target, "#", 2)[0]))
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s:%d: the link %s leads to nothing (%v)", name, l.line, l.target, err)
			}
		}
	}
	var uncited []string
	for _, e := range entries {
		if e.IsDir() && !cited[e.Name()] {
			uncited = append(uncited, e.Name())
		}
	}
	sort.Strings(uncited)
	for _, r := range uncited {
		t.Errorf("bench/results/%s is cited by no document: delete it (git rm -r) or cite it", r)
	}
}

// TestTheCheckFindsAChangedFigure runs the check on a document and results
// of its own, so that a parser that found nothing would fail here.
func TestTheCheckFindsAChangedFigure(t *testing.T) {
	results := "| row | MiB | share |\n|---|---:|---|\n| ours | 1,234.5 | 1.38 % of an hour, 0.97× |\n"
	read := func(run string) (string, error) {
		if run != "r1" {
			return "", fmt.Errorf("no run %s", run)
		}
		return results, nil
	}
	doc := func(cell string) string {
		return "Some prose.\n\nFrom [the run](../bench/results/r1/results.md):\n\n| what | figure |\n|---|---|\n| ours, p50 of 1st | " + cell + " |\n"
	}
	for _, tc := range []struct {
		cell string
		want int // problems
	}{
		{cell: "1234.5 MiB, 1.38%, 0.97 ×", want: 0},
		{cell: "1,234.5 MiB", want: 0},
		{cell: "`1.5` in code, v1.35.4, 2nd", want: 0},
		{cell: "1234.6 MiB", want: 1},
		{cell: "1.4 %", want: 1},
		{cell: "1.38×", want: 1},
		{cell: "34.5", want: 1},
		{cell: "0.97 and 2.05×", want: 1},
	} {
		t.Run(tc.cell, func(t *testing.T) {
			got := checkTables("doc.md", doc(tc.cell), true, read)
			if len(got) != tc.want {
				t.Errorf("checkTables(%q) = %q, want %d problems", tc.cell, got, tc.want)
			}
		})
	}

	uncited := "Prose without a link.\n\n| what | figure |\n|---|---|\n| ours | 12.5 |\n"
	if got := checkTables("doc.md", uncited, true, read); len(got) != 1 {
		t.Errorf("a table of figures citing no run: got %q, want one problem", got)
	}
	if got := checkTables("doc.md", uncited, false, read); len(got) != 0 {
		t.Errorf("a table citing no run in a file not held to it: got %q, want none", got)
	}
	missing := strings.Replace(doc("1"), "r1", "r2", 1)
	if got := checkTables("doc.md", missing, true, read); len(got) != 1 {
		t.Errorf("a table citing a run that does not exist: got %q, want one problem", got)
	}
}
