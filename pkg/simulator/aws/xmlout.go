package awssim

import (
	"bytes"
	"encoding/xml"
	"strconv"
	"time"
)

// el is a minimal XML element tree used to render query-protocol responses.
type el struct {
	name string
	text string
	leaf bool
	kids []*el
}

// E builds an element with children; nil children are skipped.
func E(name string, kids ...*el) *el {
	e := &el{name: name}
	for _, k := range kids {
		if k != nil {
			e.kids = append(e.kids, k)
		}
	}
	return e
}

// T builds a text element.
func T(name, text string) *el { return &el{name: name, text: text, leaf: true} }

// TOpt builds a text element, or nil when text is empty.
func TOpt(name, text string) *el {
	if text == "" {
		return nil
	}
	return T(name, text)
}

// B builds a boolean element.
func B(name string, v bool) *el { return T(name, strconv.FormatBool(v)) }

// I builds an integer element.
func I(name string, v int64) *el { return T(name, strconv.FormatInt(v, 10)) }

// F builds a float element.
func F(name string, v float64) *el { return T(name, strconv.FormatFloat(v, 'f', -1, 64)) }

// TS builds an ISO-8601 timestamp element.
func TS(name string, t time.Time) *el { return T(name, t.UTC().Format("2006-01-02T15:04:05.000Z")) }

// List builds <name><item>…</item>…</name> from pre-built items named itemName.
func List(name, itemName string, items []*el) *el {
	e := &el{name: name}
	for _, it := range items {
		it.name = itemName
		e.kids = append(e.kids, it)
	}
	return e
}

// StrList builds <name><item>v</item>…</name>.
func StrList(name, itemName string, vals []string) *el {
	e := &el{name: name}
	for _, v := range vals {
		e.kids = append(e.kids, T(itemName, v))
	}
	return e
}

func (e *el) write(b *bytes.Buffer) {
	b.WriteByte('<')
	b.WriteString(e.name)
	b.WriteByte('>')
	if e.leaf {
		_ = xml.EscapeText(b, []byte(e.text))
	}
	for _, k := range e.kids {
		k.write(b)
	}
	b.WriteString("</")
	b.WriteString(e.name)
	b.WriteByte('>')
}

func renderXML(root *el, xmlns string) []byte {
	var b bytes.Buffer
	b.WriteString(xml.Header)
	b.WriteByte('<')
	b.WriteString(root.name)
	if xmlns != "" {
		b.WriteString(` xmlns="`)
		b.WriteString(xmlns)
		b.WriteByte('"')
	}
	b.WriteByte('>')
	for _, k := range root.kids {
		k.write(&b)
	}
	b.WriteString("</")
	b.WriteString(root.name)
	b.WriteByte('>')
	return b.Bytes()
}
