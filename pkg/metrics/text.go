package metrics

import (
	"bufio"
	"bytes"
	"math"
	"strconv"
	"strings"
)

// Text exposition (Prometheus text format 0.0.4) written straight from the entries of the per-node and per-pod
// collectors, byte for byte what expfmt writes for the families a registry gathers from them: the families sorted
// by name, a family's series sorted by their label values in label name order, HELP and TYPE once a family, no
// family without series.

// textWriter writes text exposition to a buffered writer; the first write error is kept and the writes after it
// are dropped.
type textWriter struct {
	w   *bufio.Writer
	err error
	num [32]byte
}

func (t *textWriter) str(s string) {
	if t.err == nil {
		_, t.err = t.w.WriteString(s)
	}
}

func (t *textWriter) byte(b byte) {
	if t.err == nil {
		t.err = t.w.WriteByte(b)
	}
}

// header writes a gauge family's HELP and TYPE lines.
func (t *textWriter) header(name, help string) {
	t.str("# HELP ")
	t.str(name)
	t.byte(' ')
	t.escaped(help, false)
	t.str("\n# TYPE ")
	t.str(name)
	t.str(" gauge\n")
}

// escaped writes s escaped as the text format escapes a label value (quote too) or a HELP text (not).
func (t *textWriter) escaped(s string, quote bool) {
	for {
		i := strings.IndexFunc(s, func(r rune) bool { return r == '\\' || r == '\n' || (quote && r == '"') })
		if i < 0 {
			t.str(s)
			return
		}
		t.str(s[:i])
		switch s[i] {
		case '\\':
			t.str(`\\`)
		case '\n':
			t.str(`\n`)
		default:
			t.str(`\"`)
		}
		s = s[i+1:]
	}
}

// label writes sep, then name="value" with the value escaped.
func (t *textWriter) label(sep byte, name, value string) {
	t.byte(sep)
	t.str(name)
	t.str(`="`)
	t.escaped(value, true)
	t.byte('"')
}

// value ends a sample: the value as expfmt formats it, then a newline.
func (t *textWriter) value(f float64) {
	t.byte(' ')
	switch {
	case f == 1:
		t.byte('1')
	case f == 0:
		t.byte('0')
	case f == -1:
		t.str("-1")
	case math.IsNaN(f):
		t.str("NaN")
	case math.IsInf(f, +1):
		t.str("+Inf")
	case math.IsInf(f, -1):
		t.str("-Inf")
	default:
		if t.err == nil {
			_, t.err = t.w.Write(strconv.AppendFloat(t.num[:0], f, 'g', -1, 64))
		}
	}
	t.byte('\n')
}

// escapeLabels returns the labels named names[i] with values[i], in the order given, as the text format writes
// them between braces: name="value" with the value escaped, a comma before each but the first.
func escapeLabels(names, values []string) string {
	var b bytes.Buffer
	t := textWriter{w: bufio.NewWriterSize(&b, 256)}
	for i := range names {
		if i > 0 {
			t.byte(',')
		}
		t.str(names[i])
		t.str(`="`)
		t.escaped(values[i], true)
		t.byte('"')
	}
	// A bytes.Buffer does not fail. The string is a copy of its length, not of the buffer's capacity.
	_ = t.w.Flush()
	return b.String()
}
