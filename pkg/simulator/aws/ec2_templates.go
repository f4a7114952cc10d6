package awssim

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"time"
)

// launchTemplate is a stored launch template (one version; CreateLaunchTemplateVersion is not simulated).
type launchTemplate struct {
	ID, Name string
	Created  time.Time
	Data     params
	Tags     tagSet
}

func (lt *launchTemplate) imageID() string  { return lt.Data.get("ImageId") }
func (lt *launchTemplate) userData() string { return lt.Data.get("UserData") }
func (lt *launchTemplate) instanceType() string {
	return lt.Data.get("InstanceType")
}
func (lt *launchTemplate) profileName() string { return lt.Data.get("IamInstanceProfile.Name") }

// securityGroupIDs returns SecurityGroupId.N, or the ids on the first network interface.
func (lt *launchTemplate) securityGroupIDs() []string {
	if ids := lt.Data.strings("SecurityGroupId"); len(ids) > 0 {
		return ids
	}
	for _, ni := range lt.Data.list("NetworkInterface") {
		return ni.strings("SecurityGroupId")
	}
	return nil
}

// rootVolumeGiB returns the size of the first block device mapping (20 GiB when unset).
func (lt *launchTemplate) rootVolumeGiB() int {
	for _, bdm := range lt.Data.list("BlockDeviceMapping") {
		if n, err := strconv.Atoi(bdm.get("Ebs.VolumeSize")); err == nil && n > 0 {
			return n
		}
	}
	return 20
}

func (lt *launchTemplate) capacityReservationID() string {
	return lt.Data.get("CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId")
}

// capacityReservationPreference is the template's CapacityReservationPreference (open, none or
// capacity-reservations-only); empty when unset.
func (lt *launchTemplate) capacityReservationPreference() string {
	return lt.Data.get("CapacityReservationSpecification.CapacityReservationPreference")
}

func (lt *launchTemplate) instanceTags() []Tag {
	var out []Tag
	for _, ts := range lt.Data.tagSpecs("TagSpecification") {
		if ts.ResourceType == "instance" {
			out = append(out, ts.Tags...)
		}
	}
	return out
}

var ltNameRE = regexp.MustCompile(`^[a-zA-Z0-9().\-/_]{3,128}$`)

func (s *Simulator) createLaunchTemplate(_ *http.Request, a *account, p params) ([]*el, *apiError) {
	name := p.get("LaunchTemplateName")
	if name == "" {
		return nil, errMissingParam("LaunchTemplateName")
	}
	if !ltNameRE.MatchString(name) {
		return nil, errInvalidParam("Launch template name %q must be 3-128 characters of letters, digits and ()./-_", name)
	}
	if ud := p.get("LaunchTemplateData.UserData"); len(ud) > 0 && !isBase64(ud) {
		return nil, errBadRequest("InvalidUserData.Malformed", "Invalid BASE64 encoding of user data.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := a.templates[name]; ok {
		return nil, errBadRequest("InvalidLaunchTemplateName.AlreadyExistsException",
			"Launch template name already in use.")
	}
	for _, ts := range p.tagSpecs("TagSpecification") {
		if ts.ResourceType != "launch-template" {
			return nil, errInvalidParam("TagSpecification resource type %q is not valid for CreateLaunchTemplate", ts.ResourceType)
		}
	}
	lt := &launchTemplate{ID: s.nextIDLocked("lt"), Name: name, Created: s.clock.Now(), Data: p.sub("LaunchTemplateData")}
	var tags []Tag
	for _, ts := range p.tagSpecs("TagSpecification") {
		tags = append(tags, ts.Tags...)
	}
	lt.Tags = newTagSet(tags)
	a.templates[name] = lt
	return []*el{s.launchTemplateXML(a, lt)}, nil
}

func (s *Simulator) launchTemplateXML(a *account, lt *launchTemplate) *el {
	return E("launchTemplate", T("launchTemplateId", lt.ID), T("launchTemplateName", lt.Name),
		TS("createTime", lt.Created), T("createdBy", fmt.Sprintf("arn:aws:iam::%s:root", a.number)),
		I("defaultVersionNumber", 1), I("latestVersionNumber", 1), tagSetXML("tagSet", lt.Tags))
}

func (a *account) templateByID(id string) *launchTemplate {
	for _, lt := range a.templates {
		if lt.ID == id {
			return lt
		}
	}
	return nil
}

func (s *Simulator) describeLaunchTemplates(_ *http.Request, a *account, p params) ([]*el, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := p.strings("LaunchTemplateName")
	ids := p.strings("LaunchTemplateId")
	var selected []*launchTemplate
	switch {
	case len(names) > 0:
		for _, n := range names {
			lt, ok := a.templates[n]
			if !ok {
				return nil, errBadRequest("InvalidLaunchTemplateName.NotFoundException",
					"At least one of the launch templates specified in the request does not exist.")
			}
			selected = append(selected, lt)
		}
	case len(ids) > 0:
		for _, id := range ids {
			lt := a.templateByID(id)
			if lt == nil {
				return nil, errBadRequest("InvalidLaunchTemplateId.NotFound",
					"At least one of the launch templates specified in the request does not exist.")
			}
			selected = append(selected, lt)
		}
	default:
		for _, n := range sortedKeys(a.templates) {
			selected = append(selected, a.templates[n])
		}
	}
	var matched []*launchTemplate
	for _, lt := range selected {
		vals := func(name string) ([]string, bool) {
			switch name {
			case "launch-template-name":
				return []string{lt.Name}, true
			case "launch-template-id":
				return []string{lt.ID}, true
			case "create-time":
				return []string{lt.Created.UTC().Format(time.RFC3339)}, true
			}
			return nil, false
		}
		ok, err := matchFilters(p.filters(), vals, lt.Tags)
		if err != nil {
			return nil, err
		}
		if ok {
			matched = append(matched, lt)
		}
	}
	pageItems, next, err := page(matched, p, 200, 200)
	if err != nil {
		return nil, err
	}
	var items []*el
	for _, lt := range pageItems {
		items = append(items, s.launchTemplateXML(a, lt))
	}
	return []*el{List("launchTemplates", "item", items), next}, nil
}

func (s *Simulator) describeLaunchTemplateVersions(_ *http.Request, a *account, p params) ([]*el, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lt := a.templates[p.get("LaunchTemplateName")]
	if id := p.get("LaunchTemplateId"); id != "" {
		lt = a.templateByID(id)
	}
	if lt == nil {
		return nil, errBadRequest("InvalidLaunchTemplateName.NotFoundException", "The specified launch template does not exist.")
	}
	fields := []*el{TOpt("imageId", lt.imageID()), TOpt("instanceType", lt.instanceType()),
		TOpt("userData", lt.userData()), E("iamInstanceProfile", TOpt("name", lt.profileName())),
		StrList("securityGroupIdSet", "item", lt.securityGroupIDs())}
	if enclave := lt.Data.get("EnclaveOptions.Enabled"); enclave != "" {
		fields = append(fields, E("enclaveOptions", B("enabled", enclave == "true")))
	}
	data := E("launchTemplateData", fields...)
	return []*el{List("launchTemplateVersionSet", "item", []*el{E("item", T("launchTemplateId", lt.ID),
		T("launchTemplateName", lt.Name), I("versionNumber", 1), B("defaultVersion", true), TS("createTime", lt.Created), data)})}, nil
}

func (s *Simulator) deleteLaunchTemplate(_ *http.Request, a *account, p params) ([]*el, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var lt *launchTemplate
	switch {
	case p.get("LaunchTemplateId") != "":
		lt = a.templateByID(p.get("LaunchTemplateId"))
		if lt == nil {
			return nil, errBadRequest("InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", p.get("LaunchTemplateId"))
		}
	case p.get("LaunchTemplateName") != "":
		lt = a.templates[p.get("LaunchTemplateName")]
		if lt == nil {
			return nil, errBadRequest("InvalidLaunchTemplateName.NotFoundException", "The specified launch template, with template name %s, does not exist.", p.get("LaunchTemplateName"))
		}
	default:
		return nil, errMissingParam("LaunchTemplateId or LaunchTemplateName")
	}
	delete(a.templates, lt.Name)
	return []*el{s.launchTemplateXML(a, lt)}, nil
}
