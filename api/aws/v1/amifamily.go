package v1

import "strings"

// AMI families, the values of EC2NodeClass.spec.amiFamily.
const (
	AMIFamilyAL2          = "AL2"
	AMIFamilyAL2023       = "AL2023"
	AMIFamilyBottlerocket = "Bottlerocket"
	AMIFamilyWindows2019  = "Windows2019"
	AMIFamilyWindows2022  = "Windows2022"
	AMIFamilyWindows2025  = "Windows2025"
	AMIFamilyCustom       = "Custom"
)

// Windows Server builds of the Windows AMI families, the values of the node.kubernetes.io/windows-build label.
const (
	WindowsBuild2019 = "10.0.17763"
	WindowsBuild2022 = "10.0.20348"
	WindowsBuild2025 = "10.0.26100"
)

// IsWindows reports whether an AMI family runs Windows nodes.
func IsWindows(family string) bool { return WindowsBuild(family) != "" }

// WindowsBuild returns the Windows Server build of a Windows AMI family, "" for other families.
func WindowsBuild(family string) string {
	switch family {
	case AMIFamilyWindows2019:
		return WindowsBuild2019
	case AMIFamilyWindows2022:
		return WindowsBuild2022
	case AMIFamilyWindows2025:
		return WindowsBuild2025
	}
	return ""
}

// AliasVersionLatest is the alias version that follows the newest published AMI.
const AliasVersionLatest = "latest"

// Alias returns the alias term of the node class, or "" when its AMIs are selected otherwise.
func (in *EC2NodeClass) Alias() string {
	for _, t := range in.Spec.AMISelectorTerms {
		if t.Alias != "" {
			return t.Alias
		}
	}
	return ""
}

// AliasFamilyAndVersion splits an alias "family@version" into its parts.
func AliasFamilyAndVersion(alias string) (family, version string, ok bool) {
	return strings.Cut(alias, "@")
}

// AMIFamilyFromAlias maps an alias family (al2023) to its AMI family (AL2023); "" if unknown.
func AMIFamilyFromAlias(aliasFamily string) string {
	switch strings.ToLower(aliasFamily) {
	case "al2":
		return AMIFamilyAL2
	case "al2023":
		return AMIFamilyAL2023
	case "bottlerocket":
		return AMIFamilyBottlerocket
	case "windows2019":
		return AMIFamilyWindows2019
	case "windows2022":
		return AMIFamilyWindows2022
	case "windows2025":
		return AMIFamilyWindows2025
	}
	return ""
}

// AMIFamily returns the node class's AMI family: spec.amiFamily when set (it may be Custom next to an
// alias), else the alias's family. "" only for objects that bypassed validation.
func (in *EC2NodeClass) AMIFamily() string {
	if in.Spec.AMIFamily != nil {
		return *in.Spec.AMIFamily
	}
	if a := in.Alias(); a != "" {
		fam, _, _ := AliasFamilyAndVersion(a)
		return AMIFamilyFromAlias(fam)
	}
	return ""
}

// InstanceProfileName returns the instance profile the node class uses: status.instanceProfile (resolved for
// a role) or spec.instanceProfile.
func (in *EC2NodeClass) InstanceProfileName() string {
	if in.Spec.InstanceProfile != nil {
		return *in.Spec.InstanceProfile
	}
	return in.Status.InstanceProfile
}
