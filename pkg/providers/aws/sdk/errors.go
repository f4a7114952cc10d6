package sdk

import (
	"errors"
	"fmt"

	"github.com/aws/smithy-go"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

// throttleCodes are the error codes AWS services use to ask callers to slow down.
var throttleCodes = map[string]bool{
	"Throttling": true, "ThrottlingException": true, "ThrottledException": true, "RequestThrottledException": true,
	"TooManyRequestsException": true, "RequestLimitExceeded": true, "RequestThrottled": true, "SlowDown": true,
	"EC2ThrottledException": true, "PriorRequestNotComplete": true, "BandwidthLimitExceeded": true,
}

// notFoundCodes are the error codes saying the named object does not exist.
var notFoundCodes = map[string]bool{
	"InvalidInstanceID.NotFound":                  true,
	"InvalidInstanceID.Malformed":                 true,
	"InvalidLaunchTemplateName.NotFoundException": true,
	"InvalidLaunchTemplateId.NotFound":            true,
	"InvalidLaunchTemplateId.Malformed":           true,
	"NoSuchEntity":                                true,
	"ParameterNotFound":                           true,
	"ResourceNotFoundException":                   true,
	"InvalidAMIID.NotFound":                       true,
	"InvalidSubnetID.NotFound":                    true,
	"InvalidGroup.NotFound":                       true,
	"QueueDoesNotExist":                           true,
	"AWS.SimpleQueueService.NonExistentQueue":     true,
}

// launchTemplateNotFoundCodes are CreateFleet/RunInstances errors meaning a launch template is gone.
var launchTemplateNotFoundCodes = map[string]bool{
	"InvalidLaunchTemplateName.NotFoundException": true,
	"InvalidLaunchTemplateId.NotFound":            true,
	"InvalidLaunchTemplateId.VersionNotFound":     true,
}

// UnavailableOfferingCodes are CreateFleet errors that make an (instance type, zone, capacity type) offering
// unavailable for a while.
var UnavailableOfferingCodes = map[string]bool{
	"InsufficientInstanceCapacity": true,
	"MaxSpotInstanceCountExceeded": true,
	"VcpuLimitExceeded":            true,
	"UnfulfillableCapacity":        true,
	"Unsupported":                  true,
	"InsufficientCapacityOnHost":   true,
	"ReservationCapacityExceeded":  true,
}

// SubnetFullCode is the CreateFleet error meaning a subnet has no free IP addresses.
const SubnetFullCode = "InsufficientFreeAddressesInSubnet"

// ErrorCode returns the AWS error code of err, or "" when err is not an AWS API error.
func ErrorCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

// IsNotFound reports whether err says the named AWS object does not exist.
func IsNotFound(err error) bool { return notFoundCodes[ErrorCode(err)] }

// IsLaunchTemplateNotFound reports whether err (or a fleet error code) says a launch template does not exist.
func IsLaunchTemplateNotFound(code string) bool { return launchTemplateNotFoundCodes[code] }

// IsThrottled reports whether err is AWS asking us to slow down.
func IsThrottled(err error) bool { return throttleCodes[ErrorCode(err)] }

// Wrap annotates err with what was being done and maps throttling to cloudprovider.ThrottledError. It returns
// nil for a nil err.
func Wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	wrapped := fmt.Errorf(format+": %w", append(args, err)...)
	if IsThrottled(err) {
		return cloudprovider.NewThrottledError(wrapped)
	}
	return wrapped
}
