// Command linkcheck checks the Markdown documentation: every relative link in README.md and docs/**/*.md names a
// file that exists, every #anchor names a heading of its target page (GitHub's slugs), and every `make <target>`
// written in code names a target of the Makefile. It prints one line per problem and exits 1 when there is any.
//
//	go run ./hack/linkcheck [-root DIR]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

func main() {
	root := flag.String("root", ".", "repository root holding README.md, docs/ and Makefile")
	flag.Parse()
	problems, err := Check(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "linkcheck:", err)
		os.Exit(1)
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "linkcheck: %d broken links or make targets\n", len(problems))
		os.Exit(1)
	}
}

// Problem is one broken link or unknown make target, at a line of a page.
type Problem struct {
	File string
	Line int
	Msg  string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg) }

// Check reads README.md and every .md file under docs/ below root and returns their problems, sorted by file and
// line.
func Check(root string) ([]Problem, error) {
	pages := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			pages = append(pages, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing docs: %w", err)
	}
	targets, err := makeTargets(filepath.Join(root, "Makefile"))
	if err != nil {
		return nil, err
	}
	c := &checker{root: root, anchors: map[string]map[string]bool{}, targets: targets}
	var problems []Problem
	for _, page := range pages {
		ps, err := c.page(page)
		if err != nil {
			return nil, err
		}
		problems = append(problems, ps...)
	}
	sort.SliceStable(problems, func(i, j int) bool {
		if problems[i].File != problems[j].File {
			return problems[i].File < problems[j].File
		}
		return problems[i].Line < problems[j].Line
	})
	return problems, nil
}

type checker struct {
	root    string
	anchors map[string]map[string]bool // page (slash path from root) -> heading slugs
	targets map[string]bool
}

var (
	// inlineLink matches [text](dest) and ![alt](dest); dest ends at a space (a title follows) or the closing
	// parenthesis.
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refDef matches a reference definition: [label]: dest
	refDef   = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s+.*)?$`)
	codeSpan = regexp.MustCompile("`[^`]+`")
	makeCall = regexp.MustCompile(`(?:^|[\s;&|(])make\s+((?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*)([a-z][a-z0-9_-]*)`)
	scheme   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

func (c *checker) page(page string) ([]Problem, error) {
	lines, err := readLines(filepath.Join(c.root, filepath.FromSlash(page)))
	if err != nil {
		return nil, err
	}
	var problems []Problem
	add := func(line int, format string, args ...any) {
		problems = append(problems, Problem{File: page, Line: line, Msg: fmt.Sprintf(format, args...)})
	}
	fence := ""
	for i, line := range lines {
		n := i + 1
		trimmed := strings.TrimSpace(line)
		if f := fenceMarker(trimmed); f != "" {
			switch {
			case fence == "":
				fence = f
				continue
			case strings.HasPrefix(trimmed, fence) && strings.TrimLeft(trimmed, fence[:1]) == "":
				fence = ""
				continue
			}
		}
		if fence != "" {
			for _, t := range c.unknownTargets(line) {
				add(n, "make target %q is not in the Makefile", t)
			}
			continue
		}
		for _, span := range codeSpan.FindAllString(line, -1) {
			for _, t := range c.unknownTargets(strings.Trim(span, "`")) {
				add(n, "make target %q is not in the Makefile", t)
			}
		}
		text := codeSpan.ReplaceAllString(line, "")
		var dests []string
		for _, m := range inlineLink.FindAllStringSubmatch(text, -1) {
			dests = append(dests, m[1])
		}
		if m := refDef.FindStringSubmatch(text); m != nil {
			dests = append(dests, m[1])
		}
		for _, d := range dests {
			if msg, err := c.link(page, d); err != nil {
				return nil, err
			} else if msg != "" {
				add(n, "%s", msg)
			}
		}
	}
	return problems, nil
}

// unknownTargets returns the targets of `make ...` commands in s that the Makefile does not have.
func (c *checker) unknownTargets(s string) []string {
	var out []string
	for _, m := range makeCall.FindAllStringSubmatch(s, -1) {
		if !c.targets[m[2]] {
			out = append(out, m[2])
		}
	}
	return out
}

// link checks one link destination of page and returns what is wrong with it ("" when nothing is).
func (c *checker) link(page, dest string) (string, error) {
	if scheme.MatchString(dest) || strings.HasPrefix(dest, "//") {
		return "", nil // an absolute URL (https:, mailto:): not checked here
	}
	path, anchor, _ := strings.Cut(dest, "#")
	target := page
	if path != "" {
		if strings.HasPrefix(path, "/") {
			target = strings.TrimPrefix(path, "/")
		} else {
			target = filepath.ToSlash(filepath.Join(filepath.Dir(page), path))
		}
		if strings.HasPrefix(target, "../") {
			return fmt.Sprintf("link %q leaves the repository", dest), nil
		}
		if _, err := os.Stat(filepath.Join(c.root, filepath.FromSlash(target))); err != nil {
			return fmt.Sprintf("link %q: %s does not exist", dest, target), nil
		}
	}
	if anchor == "" || !strings.HasSuffix(target, ".md") {
		return "", nil
	}
	slugs, err := c.slugs(target)
	if err != nil {
		return "", err
	}
	if !slugs[strings.ToLower(anchor)] {
		return fmt.Sprintf("link %q: %s has no heading #%s", dest, target, anchor), nil
	}
	return "", nil
}

// slugs returns the anchors of page's headings, as GitHub makes them (repeated slugs get -1, -2, ...).
func (c *checker) slugs(page string) (map[string]bool, error) {
	if s, ok := c.anchors[page]; ok {
		return s, nil
	}
	lines, err := readLines(filepath.Join(c.root, filepath.FromSlash(page)))
	if err != nil {
		return nil, err
	}
	s := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	for _, line := range lines {
		trimmed := strings.TrimSpace(line)
		if f := fenceMarker(trimmed); f != "" {
			if fence == "" {
				fence = f
			} else if strings.HasPrefix(trimmed, fence) && strings.TrimLeft(trimmed, fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		heading, ok := headingText(line)
		if !ok {
			continue
		}
		slug := Slug(heading)
		if k := seen[slug]; k > 0 {
			s[fmt.Sprintf("%s-%d", slug, k)] = true
		} else {
			s[slug] = true
		}
		seen[slug]++
	}
	c.anchors[page] = s
	return s, nil
}

// headingText returns the text of an ATX heading line ("## Text ##").
func headingText(line string) (string, bool) {
	if len(line)-len(strings.TrimLeft(line, " ")) > 3 {
		return "", false
	}
	t := strings.TrimLeft(line, " ")
	level := len(t) - len(strings.TrimLeft(t, "#"))
	if level < 1 || level > 6 {
		return "", false
	}
	rest := t[level:]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return "", false
	}
	rest = strings.TrimSpace(rest)
	rest = strings.TrimSpace(strings.TrimRight(rest, "#"))
	return rest, true
}

var (
	mdLink  = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag = regexp.MustCompile(`<[^>]+>`)
)

// Slug turns a heading's text into its anchor as GitHub does: the text of links and code kept, markup and
// punctuation other than '-' and '_' dropped, lower case, spaces to '-'.
func Slug(heading string) string {
	h := mdLink.ReplaceAllString(heading, "$1")
	h = htmlTag.ReplaceAllString(h, "")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_':
			b.WriteRune(r)
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// fenceMarker returns the fence (``` or ~~~, with its length) a trimmed line opens or closes, or "".
func fenceMarker(trimmed string) string {
	for _, ch := range []string{"`", "~"} {
		if strings.HasPrefix(trimmed, ch+ch+ch) {
			n := len(trimmed) - len(strings.TrimLeft(trimmed, ch))
			return strings.Repeat(ch, n)
		}
	}
	return ""
}

var makeTarget = regexp.MustCompile(`^([A-Za-z0-9_.-]+(?:\s+[A-Za-z0-9_.-]+)*)\s*:([^=]|$)`)

// makeTargets returns the explicit targets of a Makefile (rules "a b: deps", not variable assignments).
func makeTargets(path string) (map[string]bool, error) {
	lines, err := readLines(path)
	if err != nil {
		return nil, err
	}
	t := map[string]bool{}
	for _, line := range lines {
		if strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "#") {
			continue
		}
		m := makeTarget.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, name := range strings.Fields(m[1]) {
			if !strings.HasPrefix(name, ".") {
				t[name] = true
			}
		}
	}
	return t, nil
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return lines, nil
}
