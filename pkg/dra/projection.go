package dra

import (
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
	celgo "github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	resourcev1 "k8s.io/api/resource/v1"
)

// Most selectors read a few named attributes of a device (its driver, a product name, a MIG profile, a memory
// size). Their outcome is then a function of those values alone, so devices that agree on them (the eight GPUs of a
// node, the same GPU model on two instance types) share one evaluation. An expression qualifies when every use of
// the `device` variable is one of
//
//	device.driver
//	device.allowMultipleAllocations
//	device.attributes["<domain>"].<name>   (or ["<domain>"]["<name>"], has(...) included)
//	device.capacity["<domain>"].<name>
//
// with literal names; any other use (the attribute map itself, a computed key, a comprehension over a map) makes
// the expression depend on the whole device, and it is evaluated per device. A device whose attributes the CEL
// library would refuse (no value, a version that does not parse) or whose names collide once qualified is also
// evaluated on its own, so the library's error stays its own.

// deviceRef is one value an expression reads from the device.
type deviceRef struct {
	kind         byte // 'd' driver, 'm' allowMultipleAllocations, 'a' attribute, 'c' capacity
	domain, name string
}

// selectorRefs returns the values the expression reads from the device, or ok=false when it may read more.
func selectorRefs(env *celgo.Env, expression string) (refs []deviceRef, ok bool) {
	parsed, iss := env.Parse(expression)
	if iss != nil && iss.Err() != nil {
		return nil, false
	}
	const device = "device"
	isDevice := func(e ast.Expr) bool { return e.Kind() == ast.IdentKind && e.AsIdent() == device }
	stringLit := func(e ast.Expr) (string, bool) {
		if e.Kind() != ast.LiteralKind || e.AsLiteral().Type() != types.StringType {
			return "", false
		}
		s, ok := e.AsLiteral().Value().(string)
		return s, ok
	}
	// domainMap matches device.attributes["d"] or device.capacity["d"].
	domainMap := func(e ast.Expr) (kind byte, domain string, mapIdent int64, ok bool) {
		if e.Kind() != ast.CallKind || e.AsCall().FunctionName() != "_[_]" || len(e.AsCall().Args()) != 2 {
			return 0, "", 0, false
		}
		outer, key := e.AsCall().Args()[0], e.AsCall().Args()[1]
		if outer.Kind() != ast.SelectKind || !isDevice(outer.AsSelect().Operand()) {
			return 0, "", 0, false
		}
		switch outer.AsSelect().FieldName() {
		case "attributes":
			kind = 'a'
		case "capacity":
			kind = 'c'
		default:
			return 0, "", 0, false
		}
		d, ok := stringLit(key)
		return kind, d, outer.AsSelect().Operand().ID(), ok
	}
	covered := map[int64]bool{}
	ast.PreOrderVisit(parsed.NativeRep().Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		switch e.Kind() {
		case ast.SelectKind:
			s := e.AsSelect()
			if isDevice(s.Operand()) {
				switch s.FieldName() {
				case "driver":
					refs, covered[s.Operand().ID()] = append(refs, deviceRef{kind: 'd'}), true
				case "allowMultipleAllocations":
					refs, covered[s.Operand().ID()] = append(refs, deviceRef{kind: 'm'}), true
				}
				return
			}
			if kind, domain, id, ok := domainMap(s.Operand()); ok {
				refs, covered[id] = append(refs, deviceRef{kind: kind, domain: domain, name: s.FieldName()}), true
			}
		case ast.CallKind:
			c := e.AsCall()
			if c.FunctionName() != "_[_]" || len(c.Args()) != 2 {
				return
			}
			if kind, domain, id, ok := domainMap(c.Args()[0]); ok {
				if name, ok := stringLit(c.Args()[1]); ok {
					refs, covered[id] = append(refs, deviceRef{kind: kind, domain: domain, name: name}), true
				}
			}
		}
	}))
	ok = true
	ast.PreOrderVisit(parsed.NativeRep().Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		if isDevice(e) && !covered[e.ID()] {
			ok = false
		}
	}))
	if !ok {
		return nil, false
	}
	return refs, true
}

// project returns the values of refs on a well-formed device as a key: two devices with one key give the
// expression the same inputs.
func project(refs []deviceRef, driver string, d *resourcev1.Device) string {
	var b strings.Builder
	for _, r := range refs {
		switch r.kind {
		case 'd':
			b.WriteString(strconv.Quote(driver))
		case 'm':
			b.WriteString(strconv.FormatBool(d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations))
		case 'a':
			a, found := lookup(d.Attributes, driver, r.domain, r.name)
			switch {
			case !found:
				b.WriteString("-")
			case a.IntValue != nil:
				b.WriteString("i" + strconv.FormatInt(*a.IntValue, 10))
			case a.BoolValue != nil:
				b.WriteString("b" + strconv.FormatBool(*a.BoolValue))
			case a.StringValue != nil:
				b.WriteString("s" + strconv.Quote(*a.StringValue))
			case a.VersionValue != nil:
				b.WriteString("v" + strconv.Quote(*a.VersionValue))
			}
		case 'c':
			c, found := lookup(d.Capacity, driver, r.domain, r.name)
			if !found {
				b.WriteString("-")
			} else {
				b.WriteString("q" + c.Value.String())
			}
		}
		b.WriteByte(0)
	}
	return b.String()
}

// lookup finds the entry the CEL library files under domain and name: names without a domain belong to the driver.
func lookup[V any](m map[resourcev1.QualifiedName]V, driver, domain, name string) (V, bool) {
	if domain == driver {
		if v, ok := m[resourcev1.QualifiedName(name)]; ok {
			return v, true
		}
	}
	v, ok := m[resourcev1.QualifiedName(domain+"/"+name)]
	return v, ok
}

// wellFormed reports whether the CEL library takes every attribute of the device (one value each, versions that
// parse) and no two attribute or capacity names meet under the driver's domain.
func wellFormed(driver string, d *resourcev1.Device) bool {
	for name, a := range d.Attributes {
		set := 0
		for _, p := range []bool{a.IntValue != nil, a.BoolValue != nil, a.StringValue != nil, a.VersionValue != nil} {
			if p {
				set++
			}
		}
		if set != 1 {
			return false
		}
		if a.VersionValue != nil {
			if _, err := semver.Parse(*a.VersionValue); err != nil {
				return false
			}
		}
		if !strings.Contains(string(name), "/") {
			if _, dup := d.Attributes[resourcev1.QualifiedName(driver+"/"+string(name))]; dup {
				return false
			}
		}
	}
	for name := range d.Capacity {
		if !strings.Contains(string(name), "/") {
			if _, dup := d.Capacity[resourcev1.QualifiedName(driver+"/"+string(name))]; dup {
				return false
			}
		}
	}
	return true
}
