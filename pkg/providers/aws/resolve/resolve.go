package resolve

import (
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
)

// Resolver resolves node class selectors for one cluster, account and region.
type Resolver struct {
	ec2     sdk.EC2API
	ssm     sdk.SSMAPI
	iam     sdk.IAMAPI
	cluster tags.Cluster
	region  string
	clock   clock.Clock
	// params remembers SSM parameter values (AliasParameterTTL, CustomParameterTTL).
	params *paramCache
}

// New returns a Resolver.
func New(clients *sdk.Clients, cluster tags.Cluster, clk clock.Clock) *Resolver {
	return &Resolver{ec2: clients.EC2, ssm: clients.SSM, iam: clients.IAM, cluster: cluster, region: clients.Region, clock: clk,
		params: newParamCache()}
}

// NoMatchError says selector terms matched nothing; its message names the terms so a user can fix them.
type NoMatchError struct {
	What  string
	Field string
	Terms string
}

// NoMatch marks the error as "selectors matched nothing" for callers that test with an interface.
func (e *NoMatchError) NoMatch() bool { return true }

func (e *NoMatchError) Error() string {
	return fmt.Sprintf("no %s matched %s %s", e.What, e.Field, e.Terms)
}

// describeTerm renders one selector term as "tags k=v,k2=v2" / "id x" / "name y".
func describeTerm(t map[string]string, fields ...string) string {
	var parts []string
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i+1] != "" {
			parts = append(parts, fields[i]+" "+fields[i+1])
		}
	}
	if len(t) > 0 {
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		kv := make([]string, 0, len(keys))
		for _, k := range keys {
			kv = append(kv, k+"="+t[k])
		}
		parts = append(parts, "tags "+strings.Join(kv, ","))
	}
	return strings.Join(parts, " ")
}

func describeTerms(terms []string) string { return "[" + strings.Join(terms, "; ") + "]" }

// tagFilters turns a tag selector into EC2 filters; the value "*" matches any value of the key.
func tagFilters(t map[string]string) []ec2types.Filter {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []ec2types.Filter
	for _, k := range keys {
		if t[k] == "*" {
			out = append(out, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
			continue
		}
		out = append(out, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{t[k]}})
	}
	return out
}

func filter(name string, values ...string) ec2types.Filter {
	return ec2types.Filter{Name: aws.String(name), Values: values}
}
