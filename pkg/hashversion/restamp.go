package hashversion

// Stamp is a hash annotation and the version of the scheme that computed it.
type Stamp struct {
	Hash    string
	Version string
}

// Restamp returns the stamp a NodeClaim gets when its owner (NodePool or node class) moves to the current scheme.
// claim is the NodeClaim's stamp, owner the owner's stamp before it is moved (the zero Stamp when it is unknown),
// current the owner's stamp in the current scheme. drifted reports that the NodeClaim was launched from an older
// template of its owner.
//
// A NodeClaim stamped in the owner's scheme of before is compared in that scheme: the same hash means the NodeClaim
// matches the owner as it is now, so it takes the current stamp; another hash means the owner changed after the
// launch, so the NodeClaim keeps a stamp in the current version whose hash cannot equal a current hash (the old
// version and hash joined by "/"), which drift detection reports as drift until the node is replaced. Without a
// comparable stamp (none on either side, or other versions) there is no evidence of drift, and the NodeClaim takes
// the current stamp. A NodeClaim already in the current version is returned unchanged.
func Restamp(claim, owner, current Stamp) (out Stamp, drifted bool) {
	if claim.Version == current.Version {
		return claim, false
	}
	if claim.Hash != "" && owner.Hash != "" && claim.Version == owner.Version && claim.Hash != owner.Hash {
		return Stamp{Hash: claim.Version + "/" + claim.Hash, Version: current.Version}, true
	}
	return current, false
}
