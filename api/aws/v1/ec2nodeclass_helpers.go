package v1

// EnclaveEnabled reports whether spec.enclaveOptions turns Nitro Enclaves on.
func (in *EC2NodeClass) EnclaveEnabled() bool {
	return in.Spec.EnclaveOptions != nil && in.Spec.EnclaveOptions.Enabled
}
