package settings

import (
	"flag"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	awsoptions "github.com/aws/karpenter-provider-aws/pkg/operator/options"
	"github.com/google/go-cmp/cmp"
	coreoptions "sigs.k8s.io/karpenter/pkg/operator/options"

	"github.com/dovetail/dovetail/pkg/settings"
)

// karpenter is Karpenter v1.14.0's options, core and AWS provider, built the way its operator builds them: one
// flag set, each flag's default read from its environment variable when that is set. The option packages are the
// same in every v1.14 patch release up to v1.14.3 (compared 2026-11-29).
type karpenter struct {
	fs   *coreoptions.FlagSet
	core *coreoptions.Options
	aws  *awsoptions.Options
}

func newKarpenter() karpenter {
	k := karpenter{
		fs:   &coreoptions.FlagSet{FlagSet: flag.NewFlagSet("karpenter", flag.ContinueOnError)},
		core: &coreoptions.Options{},
		aws:  &awsoptions.Options{},
	}
	k.fs.SetOutput(discard{})
	k.core.AddFlags(k.fs)
	k.aws.AddFlags(k.fs)
	return k
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// boolDefaults are Karpenter's boolean settings by flag: their flags take no default text (BoolFunc), so the
// default is read from the options after AddFlags.
func (k karpenter) boolDefaults() map[string]bool {
	return map[string]bool{
		"enable-profiling":                    k.core.EnableProfiling,
		"disable-controller-warmup":           k.core.DisableControllerWarmup,
		"disable-leader-election":             k.core.DisableLeaderElection,
		"disable-cluster-state-observability": k.core.DisableClusterStateObservability,
		"ignore-dra-requests":                 k.core.IgnoreDRARequests,
		"isolated-vpc":                        k.aws.IsolatedVPC,
		"eks-control-plane":                   k.aws.EKSControlPlane,
		"disable-dry-run":                     k.aws.DisableDryRun,
		"enable-zonal-shift":                  k.aws.EnableZonalShift,
	}
}

// v115Added are the settings Karpenter v1.15 added to v1.14's, with their defaults (sigs.k8s.io/karpenter v1.15.0
// and github.com/aws/karpenter-provider-aws v1.15.2, pkg/operator/options), by flag.
var v115Added = map[string]struct{ env, def string }{
	"legacy-node-repair":              {"LEGACY_NODE_REPAIR", "false"},
	"scheduler-config":                {"SCHEDULER_CONFIG", ""},
	"security-group-refresh-interval": {"SECURITY_GROUP_REFRESH_INTERVAL", "1m"},
	"aws-feature-gates":               {"AWS_FEATURE_GATES", "NodeClassCEL=false,DRANVIDIAGPU=false,DRAEFA=false,RebootForRepair=false"},
}

// v115Gates are Karpenter v1.15.0's FEATURE_GATES default, in its order.
const v115Gates = "NodeRepair=false,ReservedCapacity=true,SpotToSpotConsolidation=false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false,TerminateFirstDrift=false,TerminateFirstRepair=false,PodDeletionCostManagement=false"

// clearEnv unsets every setting's environment variable for the test, so Karpenter's flag set shows its own defaults.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, o := range settings.Options() {
		if _, ok := os.LookupEnv(o.Env); ok {
			t.Setenv(o.Env, "")
			if err := os.Unsetenv(o.Env); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func byFlag() map[string]settings.Option {
	m := map[string]settings.Option{}
	for _, o := range settings.Options() {
		m[o.Flag] = o
	}
	return m
}

// TestEveryKarpenterV114SettingIsDovetails: each flag of Karpenter v1.14.0 is a Dovetail setting marked v1.14, and
// each Dovetail setting marked v1.14 is a Karpenter v1.14.0 flag.
func TestEveryKarpenterV114SettingIsDovetails(t *testing.T) {
	clearEnv(t)
	k := newKarpenter()
	ours := byFlag()
	var theirs []string
	k.fs.VisitAll(func(f *flag.Flag) { theirs = append(theirs, f.Name) })
	sort.Strings(theirs)
	if len(theirs) != 34 {
		t.Errorf("Karpenter v1.14.0 has %d settings, want the 34 counted from its source", len(theirs))
	}
	for _, name := range theirs {
		o, ok := ours[name]
		if !ok {
			t.Errorf("Karpenter's --%s is not a Dovetail setting", name)
			continue
		}
		if o.Since != "v1.14" {
			t.Errorf("--%s: Since %q, want v1.14", name, o.Since)
		}
	}
	want := map[string]bool{}
	for _, n := range theirs {
		want[n] = true
	}
	for _, o := range settings.Options() {
		if o.Since == "v1.14" && !want[o.Flag] {
			t.Errorf("Dovetail's --%s is marked v1.14 but Karpenter v1.14.0 has no such flag", o.Flag)
		}
		if o.Since == "v1.15" {
			if _, ok := v115Added[o.Flag]; !ok {
				t.Errorf("Dovetail's --%s is marked v1.15 but is not among the settings v1.15 added", o.Flag)
			}
		}
		if o.Since == "" && (want[o.Flag] || v115Added[o.Flag] != struct{ env, def string }{}) {
			t.Errorf("Dovetail's --%s is Karpenter's but not marked so", o.Flag)
		}
	}
	for name, a := range v115Added {
		o, ok := ours[name]
		if !ok || o.Since != "v1.15" || o.Env != a.env {
			t.Errorf("Karpenter v1.15's --%s (%s): Dovetail has %+v", name, a.env, o)
		}
	}
}

// TestEnvironmentVariables: each Karpenter flag falls back to the environment variable Dovetail names for it. The
// variable is set to a value other than the default; Karpenter's flag set must then show that value.
func TestEnvironmentVariables(t *testing.T) {
	clearEnv(t)
	ours := byFlag()
	var flags []*flag.Flag
	newKarpenter().fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f) })
	for _, f := range flags {
		o, ok := ours[f.Name]
		if !ok {
			continue // reported by TestEveryKarpenterV114SettingIsDovetails
		}
		t.Run(f.Name, func(t *testing.T) {
			clearEnv(t)
			k := newKarpenter()
			if def, isBool := k.boolDefaults()[f.Name]; isBool {
				t.Setenv(o.Env, strconv.FormatBool(!def))
				if got := newKarpenter().boolDefaults()[f.Name]; got != !def {
					t.Errorf("%s=%v does not change Karpenter's --%s", o.Env, !def, f.Name)
				}
				return
			}
			value := "7"
			switch f.Name {
			case "batch-max-duration", "batch-idle-duration", "ami-refresh-interval", "subnet-refresh-interval":
				value = "7m0s"
			case "vm-memory-overhead-percent":
				value = "0.5"
			case "feature-gates", "log-level", "log-output-paths", "log-error-output-paths", "preference-policy",
				"min-values-policy", "cluster-name", "cluster-endpoint", "cluster-ca-bundle", "interruption-queue",
				"karpenter-service", "leader-election-name", "leader-election-namespace":
				value = "from-env"
			}
			t.Setenv(o.Env, value)
			var got string
			newKarpenter().fs.VisitAll(func(g *flag.Flag) {
				if g.Name == f.Name {
					got = g.DefValue
				}
			})
			if got != value {
				t.Errorf("with %s=%s Karpenter's --%s defaults to %q: Karpenter does not read %s for it", o.Env, value, f.Name, got, o.Env)
			}
		})
	}
}

// TestDefaults: every Dovetail setting that is Karpenter's has Karpenter's default.
func TestDefaults(t *testing.T) {
	clearEnv(t)
	k := newKarpenter()
	bools := k.boolDefaults()
	ours := byFlag()
	k.fs.VisitAll(func(f *flag.Flag) {
		o, ok := ours[f.Name]
		if !ok {
			return
		}
		theirs := f.DefValue
		if b, isBool := bools[f.Name]; isBool {
			theirs = strconv.FormatBool(b)
		}
		if !sameDefault(f.Name, o.Default, theirs) {
			t.Errorf("--%s: Dovetail's default %q, Karpenter v1.14.0's %q", f.Name, o.Default, theirs)
		}
	})
	for name, a := range v115Added {
		if o, ok := ours[name]; ok && !sameDefault(name, o.Default, a.def) {
			t.Errorf("--%s: Dovetail's default %q, Karpenter v1.15's %q", name, o.Default, a.def)
		}
	}
	if got := ours["feature-gates"].Default; got != v115Gates {
		t.Errorf("FEATURE_GATES default %q, Karpenter v1.15's %q", got, v115Gates)
	}
}

// sameDefault compares two defaults as values of the flag's kind: durations, numbers and gate lists may be
// written differently and mean the same.
func sameDefault(name, ours, theirs string) bool {
	if ours == theirs {
		return true
	}
	if a, err := time.ParseDuration(ours); err == nil {
		b, err := time.ParseDuration(theirs)
		return err == nil && a == b
	}
	if a, err := strconv.ParseFloat(ours, 64); err == nil {
		b, err := strconv.ParseFloat(theirs, 64)
		return err == nil && a == b
	}
	if name == "feature-gates" {
		// Karpenter v1.14's default names fewer gates than v1.15's: each it names must have the same value.
		want := gateMap(theirs)
		got := gateMap(ours)
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				return false
			}
		}
		return true
	}
	return false
}

func gateMap(s string) map[string]string {
	m := map[string]string{}
	for _, p := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(p, "=")
		m[k] = v
	}
	return m
}

// TestValidation: a setting value Karpenter v1.14.0 refuses, Dovetail refuses too (both with an error naming
// the setting), and a value it accepts Dovetail accepts, except where docs/settings.md says Dovetail differs.
func TestValidation(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		// dovetailDiffers: Dovetail's answer is the other one, as docs/settings.md says.
		dovetailDiffers string
	}{
		{name: "defaults", env: nil},
		{name: "no cluster name", env: map[string]string{"CLUSTER_NAME": ""}},
		{name: "log level debug", env: map[string]string{"LOG_LEVEL": "debug"}},
		{name: "log level error", env: map[string]string{"LOG_LEVEL": "error"}},
		{name: "log level verbose", env: map[string]string{"LOG_LEVEL": "verbose"}},
		{name: "log level warn", env: map[string]string{"LOG_LEVEL": "warn"}, dovetailDiffers: "warn is also accepted"},
		{name: "preference policy Ignore", env: map[string]string{"PREFERENCE_POLICY": "Ignore"}},
		{name: "preference policy lower case", env: map[string]string{"PREFERENCE_POLICY": "ignore"}},
		{name: "min values BestEffort", env: map[string]string{"MIN_VALUES_POLICY": "BestEffort"}},
		{name: "min values unknown", env: map[string]string{"MIN_VALUES_POLICY": "Loose"}},
		{name: "ami refresh 30s", env: map[string]string{"AMI_REFRESH_INTERVAL": "30s"}},
		{name: "ami refresh 5m", env: map[string]string{"AMI_REFRESH_INTERVAL": "5m"}},
		{name: "subnet refresh 59s", env: map[string]string{"SUBNET_REFRESH_INTERVAL": "59s"}},
		{name: "reserved ENIs -1", env: map[string]string{"RESERVED_ENIS": "-1"}},
		{name: "reserved ENIs 2", env: map[string]string{"RESERVED_ENIS": "2"}},
		{name: "overhead negative", env: map[string]string{"VM_MEMORY_OVERHEAD_PERCENT": "-0.1"}},
		{name: "overhead 1.5", env: map[string]string{"VM_MEMORY_OVERHEAD_PERCENT": "1.5"}, dovetailDiffers: "no memory left is refused"},
		{name: "endpoint https", env: map[string]string{"CLUSTER_ENDPOINT": "https://api.example.com"}},
		{name: "endpoint without scheme", env: map[string]string{"CLUSTER_ENDPOINT": "api.example.com"}},
		{name: "feature gate malformed", env: map[string]string{"FEATURE_GATES": "NodeRepair"}},
		{name: "feature gate on", env: map[string]string{"FEATURE_GATES": "NodeRepair=true,SpotToSpotConsolidation=true"}},
		{name: "removed gate", env: map[string]string{"FEATURE_GATES": "Drift=true"}},
		{name: "cpu requests 0", env: map[string]string{"CPU_REQUESTS": "0"}},
		{name: "memory limit -1", env: map[string]string{"MEMORY_LIMIT": "-1"}},
		{name: "zonal shift", env: map[string]string{"ENABLE_ZONAL_SHIFT": "true"}},
		{name: "eks control plane", env: map[string]string{"EKS_CONTROL_PLANE": "true"}},
		{name: "DRA requests", env: map[string]string{"IGNORE_DRA_REQUESTS": "false"}},
		{name: "DRA gates", env: map[string]string{"IGNORE_DRA_REQUESTS": "false", "AWS_FEATURE_GATES": "DRANVIDIAGPU=true,DRAEFA=true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			env := map[string]string{"CLUSTER_NAME": "demo"}
			for k, v := range tt.env {
				env[k] = v
			}
			for k, v := range env {
				if v != "" {
					t.Setenv(k, v)
				}
			}
			k := newKarpenter()
			theirErr := k.core.Parse(k.fs)
			if theirErr == nil {
				theirErr = k.aws.Parse(k.fs)
			}
			_, ourErr := settings.Parse(nil, func(name string) string { return env[name] })
			karpenterAccepts, dovetailAccepts := theirErr == nil, ourErr == nil
			if tt.dovetailDiffers != "" {
				karpenterAccepts = !karpenterAccepts
			}
			if karpenterAccepts != dovetailAccepts {
				t.Errorf("Karpenter: %v; Dovetail: %v (documented difference: %q)", theirErr, ourErr, tt.dovetailDiffers)
			}
		})
	}
}

// TestGateNames: every gate of Karpenter v1.14.0's FEATURE_GATES default and of v1.15's is a Dovetail gate with
// Karpenter's default, and Dovetail has no other.
func TestGateNames(t *testing.T) {
	clearEnv(t)
	var v114 string
	newKarpenter().fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "feature-gates" {
			v114 = f.DefValue
		}
	})
	want := gateMap(v115Gates)
	for name, v := range gateMap(v114) {
		if want[name] != v {
			t.Errorf("Karpenter v1.14.0 gate %s=%s is not in the v1.15 list with that default", name, v)
		}
	}
	got := map[string]string{}
	for _, g := range settings.FeatureGates() {
		got[g.Name] = strconv.FormatBool(g.KarpenterDefault)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FEATURE_GATES names and Karpenter defaults (-Karpenter +Dovetail):\n%s", diff)
	}
	wantAWS := gateMap(v115Added["aws-feature-gates"].def)
	gotAWS := map[string]string{}
	for _, g := range settings.AWSFeatureGates() {
		gotAWS[g.Name] = strconv.FormatBool(g.KarpenterDefault)
	}
	if diff := cmp.Diff(wantAWS, gotAWS); diff != "" {
		t.Errorf("AWS_FEATURE_GATES names and Karpenter defaults (-Karpenter +Dovetail):\n%s", diff)
	}
}
