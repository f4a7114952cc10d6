// Package kubeletcel evaluates the CEL expressions an EC2NodeClass may write in spec.kubelet maxPods,
// kubeReserved and systemReserved (Karpenter v1.15, AWS feature gate NodeClassCEL): per instance type, with the
// variables vcpus, memory_mib, default_enis, ips_per_eni, max_pods and instance_type, and the functions min and
// max over ints and doubles. An expression gives an int or a double; a reserved value is then written in the
// unit of its resource (cpu millicores rounded up to 10m, memory MiB rounded up to 16Mi, ephemeral-storage GiB,
// pid a count).
package kubeletcel

import (
	"fmt"
	"math"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// Vars are the values of an instance type an expression can read.
type Vars struct {
	VCPUs        int64
	MemoryMiB    int64
	DefaultENIs  int64
	IPsPerENI    int64
	MaxPods      int64
	InstanceType string
}

func (v Vars) activation() map[string]any {
	return map[string]any{"vcpus": v.VCPUs, "memory_mib": v.MemoryMiB, "default_enis": v.DefaultENIs,
		"ips_per_eni": v.IPsPerENI, "max_pods": v.MaxPods, "instance_type": v.InstanceType}
}

// Env compiles and evaluates expressions. It holds no mutable state and may be shared.
type Env struct{ env *cel.Env }

// New returns an Env with the variables and functions above.
func New() (*Env, error) {
	num := func(v ref.Val) (float64, bool) {
		switch x := v.(type) {
		case types.Int:
			return float64(x), true
		case types.Double:
			return float64(x), false
		}
		return math.NaN(), false
	}
	pick := func(less bool) func(l, r ref.Val) ref.Val {
		return func(l, r ref.Val) ref.Val {
			lf, lInt := num(l)
			rf, rInt := num(r)
			if lInt && rInt {
				if (l.(types.Int) < r.(types.Int)) == less {
					return l
				}
				return r
			}
			if (lf < rf) == less {
				return types.Double(lf)
			}
			return types.Double(rf)
		}
	}
	overloads := func(name string, less bool) cel.EnvOption {
		var ovs []cel.FunctionOpt
		for _, a := range []struct {
			suffix string
			l, r   *cel.Type
			out    *cel.Type
		}{
			{"int_int", cel.IntType, cel.IntType, cel.IntType},
			{"double_double", cel.DoubleType, cel.DoubleType, cel.DoubleType},
			{"int_double", cel.IntType, cel.DoubleType, cel.DoubleType},
			{"double_int", cel.DoubleType, cel.IntType, cel.DoubleType},
		} {
			ovs = append(ovs, cel.Overload(name+"_"+a.suffix, []*cel.Type{a.l, a.r}, a.out, cel.BinaryBinding(pick(less))))
		}
		return cel.Function(name, ovs...)
	}
	env, err := cel.NewEnv(
		cel.Variable("vcpus", cel.IntType), cel.Variable("memory_mib", cel.IntType),
		cel.Variable("default_enis", cel.IntType), cel.Variable("ips_per_eni", cel.IntType),
		cel.Variable("max_pods", cel.IntType), cel.Variable("instance_type", cel.StringType),
		overloads("min", true), overloads("max", false),
	)
	if err != nil {
		return nil, fmt.Errorf("building the kubelet CEL environment: %w", err)
	}
	return &Env{env: env}, nil
}

// Compile checks that expr parses, type-checks and gives an int or a double.
func (e *Env) Compile(expr string) error {
	_, err := e.program(expr)
	return err
}

func (e *Env) program(expr string) (cel.Program, error) {
	ast, issues := e.env.Compile(expr)
	if issues != nil && issues.Err() != nil {
		return nil, fmt.Errorf("expression %q: %w", expr, issues.Err())
	}
	if t := ast.OutputType(); t != cel.IntType && t != cel.DoubleType {
		return nil, fmt.Errorf("expression %q gives %s, not an int or a double", expr, t)
	}
	prg, err := e.env.Program(ast)
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", expr, err)
	}
	return prg, nil
}

// Eval evaluates expr for an instance type; a double result is truncated, a non-finite one is an error.
func (e *Env) Eval(expr string, v Vars) (int64, error) {
	prg, err := e.program(expr)
	if err != nil {
		return 0, err
	}
	out, _, err := prg.Eval(v.activation())
	if err != nil {
		return 0, fmt.Errorf("expression %q on %s: %w", expr, v.InstanceType, err)
	}
	switch x := out.Value().(type) {
	case int64:
		return x, nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) || x > math.MaxInt64 || x < math.MinInt64 {
			return 0, fmt.Errorf("expression %q on %s gives %v", expr, v.InstanceType, x)
		}
		return int64(x), nil
	}
	return 0, fmt.Errorf("expression %q on %s gives a %T", expr, v.InstanceType, out.Value())
}

// Reserved writes the result n of an expression for a kubeReserved or systemReserved key as a quantity.
func Reserved(key string, n int64) string {
	roundUp := func(v, step int64) int64 {
		if v <= 0 || v%step == 0 || v > math.MaxInt64-step {
			return v
		}
		return (v/step + 1) * step
	}
	switch key {
	case "cpu":
		return fmt.Sprintf("%dm", roundUp(n, 10))
	case "memory":
		return fmt.Sprintf("%dMi", roundUp(n, 16))
	case "ephemeral-storage":
		return fmt.Sprintf("%dGi", n)
	}
	return fmt.Sprint(n)
}
