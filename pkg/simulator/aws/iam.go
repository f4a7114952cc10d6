package awssim

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

const (
	iamVersion = "2010-05-08"
	iamXMLNS   = "https://iam.amazonaws.com/doc/2010-05-08/"
)

type instanceProfile struct {
	Name, ID, Path string
	Created        time.Time
	Roles          []string
	Tags           tagSet
}

type role struct {
	Name, ID string
	Path     string
	Created  time.Time
	Tags     tagSet
}

type iamHandler func(a *account, p params) (*el, *apiError)

func (s *Simulator) iamHandlers() map[string]iamHandler {
	return map[string]iamHandler{
		"GetInstanceProfile":            s.iamGetInstanceProfile,
		"CreateInstanceProfile":         s.iamCreateInstanceProfile,
		"DeleteInstanceProfile":         s.iamDeleteInstanceProfile,
		"AddRoleToInstanceProfile":      s.iamAddRole,
		"RemoveRoleFromInstanceProfile": s.iamRemoveRole,
		"TagInstanceProfile":            s.iamTagInstanceProfile,
		"UntagInstanceProfile":          s.iamUntagInstanceProfile,
		"ListInstanceProfiles":          s.iamListInstanceProfiles,
		"ListInstanceProfilesForRole":   s.iamListInstanceProfilesForRole,
		"GetRole":                       s.iamGetRole,
		"CreateRole":                    s.iamCreateRole,
		"SimulatePrincipalPolicy":       s.iamSimulatePrincipalPolicy,
	}
}

func (s *Simulator) serveIAM(w http.ResponseWriter, r *http.Request, a *account, p params) {
	action := p.get("Action")
	reqID := s.requestID()
	if err := s.applyFaults(r, "iam", action); err != nil {
		writeIAMError(w, err, reqID)
		return
	}
	h, ok := s.iamHandlers()[action]
	// A mutating call is recorded with the resources it names, looked up before the handler changes them.
	var checks []authzCheck
	record := ok && mutating(action)
	if record {
		checks = s.iamChecks(a, action, p)
	}
	if ok {
		if err := s.authorize(a, "iam", func() []authzCheck {
			if checks == nil {
				checks = s.iamChecks(a, action, p)
			}
			return checks
		}); err != nil {
			if record {
				s.recordCall(r, a, "iam", action, checks, err)
			}
			writeIAMError(w, err, reqID)
			return
		}
	}
	if !ok {
		s.log.Warn("unsupported IAM action", "action", action)
		writeIAMError(w, errBadRequest("InvalidAction", "awssim does not simulate IAM %s", action), reqID)
		return
	}
	result, apiErr := h(a, p)
	if record {
		s.recordCall(r, a, "iam", action, checks, apiErr)
	}
	if apiErr != nil {
		s.log.Debug("IAM call failed", "action", action, "code", apiErr.Code, "message", apiErr.Message)
		writeIAMError(w, apiErr, reqID)
		return
	}
	kids := []*el{}
	if result != nil {
		result.name = action + "Result"
		kids = append(kids, result)
	}
	kids = append(kids, E("ResponseMetadata", T("RequestId", reqID)))
	writeXML(w, http.StatusOK, renderXML(E(action+"Response", kids...), iamXMLNS))
}

func writeIAMError(w http.ResponseWriter, e *apiError, reqID string) {
	typ := "Receiver"
	if e.Sender {
		typ = "Sender"
	}
	root := E("ErrorResponse", E("Error", T("Type", typ), T("Code", e.Code), T("Message", e.Message)), T("RequestId", reqID))
	writeXML(w, e.Status, renderXML(root, iamXMLNS))
}

var iamNameRE = regexp.MustCompile(`^[\w+=,.@-]{1,128}$`)

func (s *Simulator) profileXML(a *account, ip *instanceProfile) *el {
	var roles []*el
	for _, rn := range ip.Roles {
		if r, ok := a.roles[rn]; ok {
			roles = append(roles, s.roleXML(a, r))
		}
	}
	return E("InstanceProfile", T("Path", ip.Path), T("InstanceProfileName", ip.Name), T("InstanceProfileId", ip.ID),
		T("Arn", fmt.Sprintf("arn:aws:iam::%s:instance-profile%s%s", a.number, ip.Path, ip.Name)),
		TS("CreateDate", ip.Created), List("Roles", "member", roles), iamTags(ip.Tags))
}

func (s *Simulator) roleXML(a *account, r *role) *el {
	return E("member", T("Path", r.Path), T("RoleName", r.Name), T("RoleId", r.ID),
		T("Arn", fmt.Sprintf("arn:aws:iam::%s:role%s%s", a.number, r.Path, r.Name)), TS("CreateDate", r.Created),
		T("AssumeRolePolicyDocument", "%7B%22Version%22%3A%222012-10-17%22%7D"), iamTags(r.Tags))
}

func iamTags(ts tagSet) *el {
	var items []*el
	for _, t := range ts.list() {
		items = append(items, E("member", T("Key", t.Key), T("Value", t.Value)))
	}
	return List("Tags", "member", items)
}

func (s *Simulator) profileArg(a *account, p params) (*instanceProfile, *apiError) {
	name := p.get("InstanceProfileName")
	if name == "" {
		return nil, errBadRequest("ValidationError", "1 validation error detected: Value null at 'instanceProfileName' failed to satisfy constraint: Member must not be null")
	}
	ip, ok := a.profiles[name]
	if !ok {
		return nil, errNotFound("NoSuchEntity", "Instance Profile %s cannot be found.", name)
	}
	return ip, nil
}

func (s *Simulator) iamGetInstanceProfile(a *account, p params) (*el, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ip, err := s.profileArg(a, p)
	if err != nil {
		return nil, err
	}
	return E("", s.profileXML(a, ip)), nil
}

func (s *Simulator) iamCreateInstanceProfile(a *account, p params) (*el, *apiError) {
	name := p.get("InstanceProfileName")
	if !iamNameRE.MatchString(name) {
		return nil, errBadRequest("ValidationError", "Instance profile name %q must match [\\w+=,.@-]{1,128}", name)
	}
	path := p.get("Path")
	if path == "" {
		path = "/"
	}
	if !strings.HasPrefix(path, "/") || !strings.HasSuffix(path, "/") {
		return nil, errBadRequest("ValidationError", "Path %q must begin and end with /", path)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := a.profiles[name]; ok {
		return nil, errConflict("EntityAlreadyExists", "Instance Profile %s already exists.", name)
	}
	ip := &instanceProfile{Name: name, Path: path, ID: "AIPA" + strings.ToUpper(shortHash(a.number+name+strconv.FormatUint(s.seq, 10), 17)),
		Created: s.clock.Now(), Tags: newTagSet(p.tags("Tags.member"))}
	a.profiles[name] = ip
	return E("", s.profileXML(a, ip)), nil
}

func (s *Simulator) iamDeleteInstanceProfile(a *account, p params) (*el, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ip, err := s.profileArg(a, p)
	if err != nil {
		return nil, err
	}
	if len(ip.Roles) > 0 {
		return nil, errConflict("DeleteConflict", "Cannot delete entity, must remove roles from instance profile first.")
	}
	delete(a.profiles, ip.Name)
	return nil, nil
}

func (s *Simulator) iamAddRole(a *account, p params) (*el, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ip, err := s.profileArg(a, p)
	if err != nil {
		return nil, err
	}
	rn := p.get("RoleName")
	if _, ok := a.roles[rn]; !ok {
		return nil, errNotFound("NoSuchEntity", "The role with name %s cannot be found.", rn)
	}
	if len(ip.Roles) >= 1 {
		return nil, errConflict("LimitExceeded", "Cannot exceed quota for InstanceSessionsPerInstanceProfile: 1")
	}
	ip.Roles = append(ip.Roles, rn)
	return nil, nil
}

func (s *Simulator) iamRemoveRole(a *account, p params) (*el, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ip, err := s.profileArg(a, p)
	if err != nil {
		return nil, err
	}
	rn := p.get("RoleName")
	for i, r := range ip.Roles {
		if r == rn {
			ip.Roles = append(ip.Roles[:i], ip.Roles[i+1:]...)
			return nil, nil
		}
	}
	return nil, errNotFound("NoSuchEntity", "The role with name %s cannot be found in instance profile %s.", rn, ip.Name)
}

func (s *Simulator) iamTagInstanceProfile(a *account, p params) (*el, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ip, err := s.profileArg(a, p)
	if err != nil {
		return nil, err
	}
	for _, t := range p.tags("Tags.member") {
		ip.Tags[t.Key] = t.Value
	}
	return nil, nil
}

func (s *Simulator) iamUntagInstanceProfile(a *account, p params) (*el, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ip, err := s.profileArg(a, p)
	if err != nil {
		return nil, err
	}
	for _, k := range p.strings("TagKeys.member") {
		delete(ip.Tags, k)
	}
	return nil, nil
}

func (s *Simulator) iamListInstanceProfiles(a *account, p params) (*el, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prefix := p.get("PathPrefix")
	var matched []*instanceProfile
	for _, n := range sortedKeys(a.profiles) {
		ip := a.profiles[n]
		if prefix == "" || strings.HasPrefix(ip.Path, prefix) {
			matched = append(matched, ip)
		}
	}
	return s.profileList(a, p, matched)
}

func (s *Simulator) iamListInstanceProfilesForRole(a *account, p params) (*el, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rn := p.get("RoleName")
	if _, ok := a.roles[rn]; !ok {
		return nil, errNotFound("NoSuchEntity", "The role with name %s cannot be found.", rn)
	}
	var matched []*instanceProfile
	for _, n := range sortedKeys(a.profiles) {
		if contains(a.profiles[n].Roles, rn) {
			matched = append(matched, a.profiles[n])
		}
	}
	return s.profileList(a, p, matched)
}

func (s *Simulator) profileList(a *account, p params, matched []*instanceProfile) (*el, *apiError) {
	start := 0
	if m := p.get("Marker"); m != "" {
		n, err := strconv.Atoi(m)
		if err != nil || n < 0 || n > len(matched) {
			return nil, errBadRequest("ValidationError", "Invalid Marker %q", m)
		}
		start = n
	}
	limit, ok := p.intOr("MaxItems", 100)
	if !ok || limit < 1 || limit > 1000 {
		return nil, errBadRequest("ValidationError", "MaxItems must be between 1 and 1000")
	}
	end := min(start+limit, len(matched))
	var items []*el
	for _, ip := range matched[start:end] {
		x := s.profileXML(a, ip)
		x.name = "member"
		items = append(items, x)
	}
	out := E("", List("InstanceProfiles", "member", items), B("IsTruncated", end < len(matched)))
	if end < len(matched) {
		out.kids = append(out.kids, T("Marker", strconv.Itoa(end)))
	}
	return out, nil
}

func (s *Simulator) iamGetRole(a *account, p params) (*el, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := a.roles[p.get("RoleName")]
	if !ok {
		return nil, errNotFound("NoSuchEntity", "The role with name %s cannot be found.", p.get("RoleName"))
	}
	x := s.roleXML(a, r)
	x.name = "Role"
	return E("", x), nil
}

func (s *Simulator) iamCreateRole(a *account, p params) (*el, *apiError) {
	name := p.get("RoleName")
	if !iamNameRE.MatchString(name) {
		return nil, errBadRequest("ValidationError", "Role name %q must match [\\w+=,.@-]{1,64}", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := a.roles[name]; ok {
		return nil, errConflict("EntityAlreadyExists", "Role with name %s already exists.", name)
	}
	path := p.get("Path")
	if path == "" {
		path = "/"
	}
	r := &role{Name: name, ID: "AROA" + strings.ToUpper(shortHash(a.number+name, 17)), Path: path, Created: s.clock.Now(),
		Tags: newTagSet(p.tags("Tags.member"))}
	a.roles[name] = r
	x := s.roleXML(a, r)
	x.name = "Role"
	return E("", x), nil
}
