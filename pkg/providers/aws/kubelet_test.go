package aws

import (
	"encoding/json"
	"strings"
	"testing"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/kubeletcel"
)

// TestValidateKubelet: the reason each family gives a kubelet configuration, as Karpenter v1.15's status controller
// does ("" for accepted).
func TestValidateKubelet(t *testing.T) {
	for _, tc := range []struct {
		name, family, doc, reason, message string
	}{
		{"empty", awsv1.AMIFamilyBottlerocket, `{}`, "", ""},
		{"modelled fields on AL2", awsv1.AMIFamilyAL2, `{"maxPods":20,"kubeReserved":{"cpu":"100m"},"clusterDNS":["10.0.0.10"]}`, "", ""},
		{"upstream field on AL2023", awsv1.AMIFamilyAL2023, `{"serializeImagePulls":false,"logging":{"format":"json"}}`, "", ""},
		{"upstream field on Custom", awsv1.AMIFamilyCustom, `{"serializeImagePulls":false}`, "", ""},
		{"upstream field on AL2", awsv1.AMIFamilyAL2, `{"serializeImagePulls":false,"containerLogMaxFiles":3}`,
			awsv1.ReasonUnsupportedKubeletConfiguration, "the AL2 AMI family does not apply containerLogMaxFiles, serializeImagePulls"},
		{"upstream field on Bottlerocket", awsv1.AMIFamilyBottlerocket, `{"serializeImagePulls":false}`, awsv1.ReasonUnsupportedKubeletConfiguration, "serializeImagePulls"},
		{"upstream field on Windows", awsv1.AMIFamilyWindows2022, `{"serializeImagePulls":false}`, awsv1.ReasonUnsupportedKubeletConfiguration, "serializeImagePulls"},
		{"podsPerCore on Bottlerocket", awsv1.AMIFamilyBottlerocket, `{"podsPerCore":2}`, awsv1.ReasonUnsupportedKubeletConfiguration, "does not apply podsPerCore"},
		{"podsPerCore on AL2", awsv1.AMIFamilyAL2, `{"podsPerCore":2}`, "", ""},
		{"two clusterDNS on AL2", awsv1.AMIFamilyAL2, `{"clusterDNS":["10.0.0.10","10.0.0.11"]}`, awsv1.ReasonUnsupportedKubeletConfiguration, "takes one address, 2 are set"},
		{"two clusterDNS on AL2023", awsv1.AMIFamilyAL2023, `{"clusterDNS":["10.0.0.10","10.0.0.11"]}`, "", ""},
		{"unknown field", awsv1.AMIFamilyAL2023, `{"notAKubeletField":true}`, awsv1.ReasonInvalidKubeletConfiguration, `unknown field "notAKubeletField"`},
		{"wrong type", awsv1.AMIFamilyAL2023, `{"podsPerCore":"ten"}`, awsv1.ReasonInvalidKubeletConfiguration, "cannot unmarshal"},
		{"out of range", awsv1.AMIFamilyAL2023, `{"imageGCHighThresholdPercent":101}`, awsv1.ReasonInvalidKubeletConfiguration, "not between 0 and 100"},
		{"maxPods expression", awsv1.AMIFamilyAL2023, `{"maxPods":"min(pods, 110)"}`, awsv1.ReasonKubeletExpressionsDisabled, "NodeClassCEL"},
		{"reserved expression", awsv1.AMIFamilyBottlerocket, `{"systemReserved":{"memory":"pods * 11"}}`, awsv1.ReasonKubeletExpressionsDisabled, "NodeClassCEL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var k awsv1.KubeletConfiguration
			if err := json.Unmarshal([]byte(tc.doc), &k); err != nil {
				t.Fatal(err)
			}
			err := validateKubelet(tc.family, k, nil)
			if got := awsv1.ValidationReason(err); got != tc.reason {
				t.Fatalf("reason %q (%v), want %q", got, err, tc.reason)
			}
			if tc.message != "" && !strings.Contains(err.Error(), tc.message) {
				t.Errorf("message %q lacks %q", err.Error(), tc.message)
			}
		})
	}
}

func TestValidateUserDataSize(t *testing.T) {
	if err := validateUserDataSize(strings.Repeat("x", awsv1.UserDataSizeLimit)); err != nil {
		t.Errorf("16 KiB refused: %v", err)
	}
	err := validateUserDataSize(strings.Repeat("x", awsv1.UserDataSizeLimit+1))
	if awsv1.ValidationReason(err) != awsv1.ReasonUserDataSizeLimitExceeded {
		t.Errorf("16 KiB + 1 byte: %v, want reason %s", err, awsv1.ReasonUserDataSizeLimitExceeded)
	}
}

// TestValidateKubeletWithCEL: with the NodeClassCEL gate on, expressions that compile are accepted and the others
// are KubeletExpressionInvalid.
func TestValidateKubeletWithCEL(t *testing.T) {
	env, err := kubeletcel.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ doc, reason string }{
		{`{"maxPods":"min(max_pods, 110)","kubeReserved":{"memory":"max_pods * 11 + 255"},"systemReserved":{"cpu":"vcpus * 10"}}`, ""},
		{`{"maxPods":"min(max_pods,"}`, awsv1.ReasonKubeletExpressionInvalid},
		{`{"kubeReserved":{"memory":"pods * 11"}}`, awsv1.ReasonKubeletExpressionInvalid},
		{`{"systemReserved":{"cpu":"instance_type"}}`, awsv1.ReasonKubeletExpressionInvalid},
	} {
		var k awsv1.KubeletConfiguration
		if err := json.Unmarshal([]byte(tc.doc), &k); err != nil {
			t.Fatal(err)
		}
		if got := awsv1.ValidationReason(validateKubelet(awsv1.AMIFamilyAL2023, k, env)); got != tc.reason {
			t.Errorf("%s: reason %q, want %q", tc.doc, got, tc.reason)
		}
	}
}
