package instance

import (
	"context"
	"errors"
	"maps"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
)

// DeniedError says a dry-run call was refused for lack of permission (EC2's UnauthorizedOperation): Action is
// the call ("CreateFleet", "RunInstances"), Err EC2's answer.
type DeniedError struct {
	Action string
	Err    error
}

// Error is EC2's code and message ("UnauthorizedOperation: You are not authorized …"), or the whole error when it
// is not an API error.
func (e *DeniedError) Error() string {
	var apiErr smithy.APIError
	if errors.As(e.Err, &apiErr) {
		return apiErr.ErrorCode() + ": " + apiErr.ErrorMessage()
	}
	return e.Err.Error()
}
func (e *DeniedError) Unwrap() error { return e.Err }

// DeniedAction names the call refused.
func (e *DeniedError) DeniedAction() string { return e.Action }

// dryRunPassed is EC2's answer to a dry run the caller may make.
const dryRunPassed = "DryRunOperation"

// deniedCodes are EC2's answers to a call the caller may not make.
var deniedCodes = map[string]bool{"UnauthorizedOperation": true, "AccessDenied": true, "AccessDeniedException": true, "AuthFailure": true}

// DryRun asks EC2 whether r could be launched without launching it: a dry-run CreateFleet of r (on-demand), then
// dry-run RunInstances of r's first instance type and launch template, once per subnet of r's choices until one
// passes. It returns nil when both pass, a *DeniedError when EC2 refuses one for permissions, and any other
// failure wrapped (throttling as a ThrottledError). Calls are not retried: the caller tries again later.
func (p *Provider) DryRun(ctx context.Context, r FleetRequest) error {
	in, err := FleetInput(r)
	if err != nil {
		return err
	}
	in.DryRun = aws.Bool(true)
	if _, err := p.ec2.CreateFleet(ctx, in, noRetry); !passed(err) {
		return classify("CreateFleet", err)
	}
	first := r.Choices[0]
	all := maps.Clone(r.Tags)
	if all == nil {
		all = map[string]string{}
	}
	maps.Copy(all, r.InstanceTags)
	var firstErr error
	seen := map[string]bool{}
	for _, c := range r.Choices {
		if seen[c.SubnetID] {
			continue
		}
		seen[c.SubnetID] = true
		_, err := p.ec2.RunInstances(ctx, &ec2.RunInstancesInput{
			DryRun:   aws.Bool(true),
			MinCount: aws.Int32(1),
			MaxCount: aws.Int32(1),
			LaunchTemplate: &ec2types.LaunchTemplateSpecification{
				LaunchTemplateName: aws.String(r.LaunchTemplates[first.InstanceType]),
				Version:            aws.String("$Latest"),
			},
			InstanceType: ec2types.InstanceType(first.InstanceType),
			NetworkInterfaces: []ec2types.InstanceNetworkInterfaceSpecification{
				{DeviceIndex: aws.Int32(0), SubnetId: aws.String(c.SubnetID)},
			},
			TagSpecifications: []ec2types.TagSpecification{
				{ResourceType: ec2types.ResourceTypeInstance, Tags: tags.EC2(all)},
				{ResourceType: ec2types.ResourceTypeVolume, Tags: tags.EC2(all)},
			},
		}, noRetry)
		if passed(err) {
			return nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return classify("RunInstances", firstErr)
}

// noRetry turns off the client's retries for one call: a throttled dry run is tried again on the next
// reconcile rather than adding to the load.
func noRetry(o *ec2.Options) { o.Retryer = aws.NopRetryer{} }

func passed(err error) bool { return err == nil || sdk.ErrorCode(err) == dryRunPassed }

func classify(action string, err error) error {
	if d := Denied(action, err); d != err {
		return d
	}
	return sdk.Wrap(err, "dry-run %s", action)
}

// Denied returns a *DeniedError for action when err is EC2 refusing the call for permissions, else err.
func Denied(action string, err error) error {
	if deniedCodes[sdk.ErrorCode(err)] {
		return &DeniedError{Action: action, Err: err}
	}
	return err
}
