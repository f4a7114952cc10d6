package sdk

import "testing"

func TestLaunchFailureReason(t *testing.T) {
	tests := []struct{ code, message, want string }{
		{"InsufficientInstanceCapacity", "We currently do not have sufficient capacity", "LaunchFailed"},
		{"UnfulfillableCapacity", "Unable to fulfill capacity due to your request configuration", "LaunchFailed"},
		{"AuthFailure.ServiceLinkedRoleCreationNotPermitted", "no permission", "SpotSLRCreationFailed"},
		{"UnauthorizedOperation", "You are not authorized. Not authorized for images: [ami-1]", "AMIAuthorizationFailure"},
		{"UnauthorizedOperation", "You are not authorized to perform this operation", "Unauthorized"},
		{"InvalidParameter", "Security group sg-1 and subnet subnet-1 belong to different networks", "SecurityGroupSubnetVPCMismatch"},
		{"InvalidParameterValue", "Value (x) for parameter iamInstanceProfile.name is invalid", "InstanceProfileNameInvalid"},
		{"InvalidLaunchTemplateId.NotFound", "not found", "LaunchTemplateNotFound"},
		{"InvalidParameterValue", "User data is limited to 16384 bytes", "UserDataSizeLimitExceeded"},
		{"InvalidAMIID.Malformed", "bad", "InvalidAMIID"},
		{"InvalidAMIID.NotFound", "gone", "AMINotFound"},
		{"RequestLimitExceeded", "slow down", "RequestLimitExceeded"},
		{"InternalError", "oops", "InternalError"},
		{"InvalidParameterCombination", "The specified instance type is not eligible for Free Tier", "FreeTierIneligible"},
		{"MaxFleetCountExceeded", "quota", "FleetQuotaExceeded"},
		{"PendingVerification", "wait", "AccountPendingVerification"},
		{"MaxSpotInstanceCountExceeded", "quota", "SpotQuotaExceeded"},
		{"VcpuLimitExceeded", "quota", "VCPULimitExceeded"},
		{"InsufficientFreeAddressesInSubnet", "full", "InsufficientFreeAddressesInSubnet"},
		{"InvalidParameter", "something else", "LaunchFailed"},
	}
	for _, tt := range tests {
		if got := LaunchFailureReason(tt.code, tt.message); got != tt.want {
			t.Errorf("LaunchFailureReason(%q, %q) = %q, want %q", tt.code, tt.message, got, tt.want)
		}
	}
}
