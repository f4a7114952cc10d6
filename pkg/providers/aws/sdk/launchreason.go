package sdk

import "strings"

// launchReasons map what a CreateFleet error says (its code and message, as "code: message") to the reason label
// of karpenter_cloudprovider_instance_launch_failures_total, Karpenter's launch-failure reasons. The first rule
// whose every fragment the text contains wins, so the order matters: specific authorization failures before the
// generic one, capacity and quota errors last.
var launchReasons = []struct {
	all    []string
	reason string
}{
	{[]string{"AuthFailure.ServiceLinkedRoleCreationNotPermitted"}, "SpotSLRCreationFailed"},
	{[]string{"Not authorized for images"}, "AMIAuthorizationFailure"},
	{[]string{"UnauthorizedOperation"}, "Unauthorized"},
	{[]string{"AccessDenied"}, "Unauthorized"},
	{[]string{"AuthFailure"}, "Unauthorized"},
	{[]string{"InvalidParameter", "belong to different networks"}, "SecurityGroupSubnetVPCMismatch"},
	{[]string{"iamInstanceProfile.name is invalid"}, "InstanceProfileNameInvalid"},
	{[]string{"InvalidLaunchTemplateId.NotFound"}, "LaunchTemplateNotFound"},
	{[]string{"User data is limited to"}, "UserDataSizeLimitExceeded"},
	{[]string{"InvalidAMIID.Malformed"}, "InvalidAMIID"},
	{[]string{"InvalidAMIID.NotFound"}, "AMINotFound"},
	{[]string{"RequestLimitExceeded"}, "RequestLimitExceeded"},
	{[]string{"InternalError"}, "InternalError"},
	{[]string{"not eligible for Free Tier"}, "FreeTierIneligible"},
	{[]string{"MaxFleetCountExceeded"}, "FleetQuotaExceeded"},
	{[]string{"PendingVerification"}, "AccountPendingVerification"},
	{[]string{"MaxSpotInstanceCountExceeded"}, "SpotQuotaExceeded"},
	{[]string{"VcpuLimitExceeded"}, "VCPULimitExceeded"},
	{[]string{"InsufficientFreeAddressesInSubnet"}, "InsufficientFreeAddressesInSubnet"},
}

// LaunchFailureReason is the reason Karpenter gives a CreateFleet error of this code and message; LaunchFailed for
// any other (capacity errors such as InsufficientInstanceCapacity among them).
func LaunchFailureReason(code, message string) string {
	text := code + ": " + message
	for _, r := range launchReasons {
		matched := true
		for _, f := range r.all {
			if !strings.Contains(text, f) {
				matched = false
				break
			}
		}
		if matched {
			return r.reason
		}
	}
	return "LaunchFailed"
}
