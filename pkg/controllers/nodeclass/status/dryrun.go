package status

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// Reasons of ValidationSucceeded from the launch dry run, as Karpenter v1.14 names them.
const (
	// ReasonCreateLaunchTemplateAuthFailed: EC2 refused to create the node class's launch template.
	ReasonCreateLaunchTemplateAuthFailed = "CreateLaunchTemplateAuthCheckFailed"
	// ReasonCreateFleetAuthFailed: a dry-run CreateFleet with the node class was refused.
	ReasonCreateFleetAuthFailed = "CreateFleetAuthCheckFailed"
	// ReasonRunInstancesAuthFailed: a dry-run RunInstances with the node class was refused in every subnet.
	ReasonRunInstancesAuthFailed = "RunInstancesAuthCheckFailed"
	// ReasonDependenciesNotReady: the subnets, security groups, AMIs or instance profile are not resolved, so
	// no launch can be tried.
	ReasonDependenciesNotReady = "DependenciesNotReady"
)

// validationTTL is how long the outcome of a dry run is kept for a node class whose status and spec do not
// change (Karpenter v1.14 keeps it as long).
const validationTTL = 30 * time.Minute

// LaunchDryRunner is implemented by a resolver that can check, without launching, that the controller may
// launch with a node class (the AWS provider). A refusal for permissions is an error with a
// DeniedAction() string method naming the call refused: CreateLaunchTemplate, CreateFleet or RunInstances.
type LaunchDryRunner interface {
	DryRunLaunch(ctx context.Context, nc *awsv1.EC2NodeClass) error
}

var authFailureReasons = map[string]string{
	"CreateLaunchTemplate": ReasonCreateLaunchTemplateAuthFailed,
	"CreateFleet":          ReasonCreateFleetAuthFailed,
	"RunInstances":         ReasonRunInstancesAuthFailed,
}

// dependencyConditions must be True before a launch can be dry-run.
var dependencyConditions = []string{awsv1.ConditionTypeAMIsReady, awsv1.ConditionTypeInstanceProfileReady,
	awsv1.ConditionTypeSecurityGroupsReady, awsv1.ConditionTypeSubnetsReady}

// validation is one dry run's outcome: reason "" is success.
type validation struct {
	key             string
	reason, message string
	expires         time.Time
}

// validations remembers the last dry-run outcome of each node class, by the hash of what the dry run used.
type validations struct {
	mu      sync.Mutex
	entries map[string]validation
}

func (v *validations) get(name, key string, now time.Time) (validation, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.entries[name]
	if !ok || e.key != key || !now.Before(e.expires) {
		return validation{}, false
	}
	return e, true
}

func (v *validations) put(name string, e validation) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.entries == nil {
		v.entries = map[string]validation{}
	}
	v.entries[name] = e
}

func (v *validations) forget(name string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.entries, name)
}

// validationKey hashes what a dry run depends on: the resolved subnets, security groups, AMIs and instance
// profile, the spec (tags included) and the annotations.
func validationKey(nc *awsv1.EC2NodeClass) string {
	b, err := json.Marshal([]any{nc.Status.Subnets, nc.Status.SecurityGroups, nc.Status.AMIs, nc.Status.InstanceProfile,
		nc.Spec, nc.Annotations})
	if err != nil {
		// Every part is plain data; an error would mean no caching, not a wrong answer.
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// validateLaunch sets ValidationSucceeded for a node class whose own settings are valid: DependenciesNotReady
// until its subnets, security groups, AMIs and instance profile are resolved, then the outcome of a launch dry
// run (kept validationTTL while nothing it used changes; skipped, and True, with DISABLE_DRY_RUN). It returns
// whether the dry run failed for another reason than permissions (to be tried again soon).
func (c *Controller) validateLaunch(ctx context.Context, nc *awsv1.EC2NodeClass) bool {
	const waiting = "waiting for the subnets, security groups, AMIs and instance profile to be resolved"
	unknown := false
	for _, t := range dependencyConditions {
		cond := meta.FindStatusCondition(nc.Status.Conditions, t)
		switch {
		case cond != nil && cond.Status == metav1.ConditionFalse:
			nc.SetFalse(awsv1.ConditionTypeValidationSucceeded, ReasonDependenciesNotReady, waiting)
			return false
		case cond == nil || cond.Status != metav1.ConditionTrue:
			unknown = true
		}
	}
	if unknown {
		nc.SetCondition(awsv1.ConditionTypeValidationSucceeded, metav1.ConditionUnknown, ReasonDependenciesNotReady, waiting)
		return false
	}
	now := c.now()
	key := validationKey(nc)
	if e, ok := c.validations.get(nc.Name, key, now); ok {
		setValidation(nc, e)
		return false
	}
	runner, _ := c.resolver.(LaunchDryRunner)
	if runner == nil || (c.deps.Settings != nil && c.deps.Settings.DisableDryRun) {
		e := validation{key: key, expires: now.Add(validationTTL)}
		c.validations.put(nc.Name, e)
		setValidation(nc, e)
		return false
	}
	err := runner.DryRunLaunch(ctx, nc)
	var denied interface{ DeniedAction() string }
	switch {
	case err == nil:
		e := validation{key: key, expires: now.Add(validationTTL)}
		c.validations.put(nc.Name, e)
		setValidation(nc, e)
		return false
	case errors.As(err, &denied):
		action := denied.DeniedAction()
		reason, ok := authFailureReasons[action]
		if !ok {
			reason = karpv1.ReasonValidationFailed
		}
		e := validation{key: key, reason: reason, expires: now.Add(validationTTL),
			message: fmt.Sprintf("the controller is not authorized to call ec2:%s: %v", action, err)}
		log.FromContext(ctx).Error(err, "launch dry run denied", "action", "ec2:"+action)
		c.validations.put(nc.Name, e)
		setValidation(nc, e)
		return false
	default:
		log.FromContext(ctx).Info("launch dry run failed; retrying", "error", err.Error())
		if cond := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeValidationSucceeded); cond == nil ||
			cond.ObservedGeneration != nc.Generation {
			nc.SetCondition(awsv1.ConditionTypeValidationSucceeded, metav1.ConditionUnknown, ReasonResolutionFailed,
				fmt.Sprintf("launch dry run failed: %v", err))
		}
		return true
	}
}

func setValidation(nc *awsv1.EC2NodeClass, e validation) {
	if e.reason == "" {
		nc.SetTrue(awsv1.ConditionTypeValidationSucceeded, karpv1.ReasonValidationSucceeded)
		return
	}
	nc.SetFalse(awsv1.ConditionTypeValidationSucceeded, e.reason, e.message)
}
