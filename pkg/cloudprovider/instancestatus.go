package cloudprovider

import (
	"context"
	"time"
)

// StatusCategory is the kind of an instance status check.
type StatusCategory string

// Status check categories, named as Karpenter's instance_status_unhealthy_total metric labels them.
const (
	// StatusCategoryInstance is the instance's own reachability check (its operating system, network, memory).
	StatusCategoryInstance StatusCategory = "InstanceStatus"
	// StatusCategorySystem is the check of the host the instance runs on.
	StatusCategorySystem StatusCategory = "SystemStatus"
	// StatusCategoryEvent is a scheduled event (reboot, maintenance, retirement, stop) announced for the instance.
	StatusCategoryEvent StatusCategory = "EventStatus"
)

// StatusCheck is one failing check, or one scheduled event, of an instance.
type StatusCheck struct {
	Category StatusCategory
	// Name is the check's name (reachability) or the event's code (instance-retirement).
	Name string
	// ImpairedSince is when the check started failing (zero when the cloud does not say; a scheduled event has
	// none).
	ImpairedSince time.Time
	// NotBefore is the earliest start of a scheduled event (zero when not an event or unknown).
	NotBefore time.Time
}

// InstanceStatus is the status of one instance whose checks fail or that has scheduled events.
type InstanceStatus struct {
	InstanceID string
	Checks     []StatusCheck
}

// InstanceStatusLister lists the instances of the account and region whose status checks fail or that have
// scheduled events, in one batched (paginated) pass, whoever owns them.
type InstanceStatusLister interface {
	UnhealthyInstances(ctx context.Context) ([]InstanceStatus, error)
}
