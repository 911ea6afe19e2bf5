package webhooks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
)

const (
	sizeDetail = "must be between 1 and 3"

	size4Warning = "spec.size is 4, still above 3: the pool is not rolled out until it is at most 3"
	size7Warning = "spec.size is 7, still above 3: the pool is not rolled out until it is at most 3"
)

// memcached returns the Memcached "pool" with the given spec.size and spec.containerPort; nil
// leaves a field unset.
func memcached(size, containerPort *int32) *cachev1alpha1.Memcached {
	return &cachev1alpha1.Memcached{
		TypeMeta:   metav1.TypeMeta{APIVersion: "cache.seedlabs.dev/v1alpha1", Kind: "Memcached"},
		ObjectMeta: metav1.ObjectMeta{Name: "pool", Namespace: "default"},
		Spec:       cachev1alpha1.MemcachedSpec{Size: size, ContainerPort: containerPort},
	}
}

func TestDefaultMemcached(t *testing.T) {
	tests := []struct {
		name string
		spec cachev1alpha1.MemcachedSpec
		want cachev1alpha1.MemcachedSpec
	}{
		{
			name: "empty spec gets every default",
			want: cachev1alpha1.MemcachedSpec{Size: ptr.To[int32](1), ContainerPort: ptr.To[int32](11211)},
		},
		{
			name: "size 3 is kept",
			spec: cachev1alpha1.MemcachedSpec{Size: ptr.To[int32](3)},
			want: cachev1alpha1.MemcachedSpec{Size: ptr.To[int32](3), ContainerPort: ptr.To[int32](11211)},
		},
		{
			name: "containerPort 8080 is kept",
			spec: cachev1alpha1.MemcachedSpec{ContainerPort: ptr.To[int32](8080)},
			want: cachev1alpha1.MemcachedSpec{Size: ptr.To[int32](1), ContainerPort: ptr.To[int32](8080)},
		},
		{
			name: "size 0 and containerPort 0 are kept for validation to refuse",
			spec: cachev1alpha1.MemcachedSpec{Size: ptr.To[int32](0), ContainerPort: ptr.To[int32](0)},
			want: cachev1alpha1.MemcachedSpec{Size: ptr.To[int32](0), ContainerPort: ptr.To[int32](0)},
		},
		{
			name: "size 7 above the range is kept",
			spec: cachev1alpha1.MemcachedSpec{Size: ptr.To[int32](7)},
			want: cachev1alpha1.MemcachedSpec{Size: ptr.To[int32](7), ContainerPort: ptr.To[int32](11211)},
		},
		{
			name: "fully specified spec is unchanged",
			spec: cachev1alpha1.MemcachedSpec{Size: ptr.To[int32](2), ContainerPort: ptr.To[int32](1)},
			want: cachev1alpha1.MemcachedSpec{Size: ptr.To[int32](2), ContainerPort: ptr.To[int32](1)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &cachev1alpha1.Memcached{
				ObjectMeta: metav1.ObjectMeta{Name: "pool", Namespace: "default", Labels: map[string]string{"app": "memcached"}},
				Spec:       tc.spec,
				Status:     cachev1alpha1.MemcachedStatus{Replicas: 2, Selector: "app=memcached", Nodes: []string{"pool-a", "pool-b"}},
			}
			wantMeta, wantStatus := *m.ObjectMeta.DeepCopy(), *m.Status.DeepCopy()

			Memcached.Default(m)

			if diff := gocmp.Diff(tc.want, m.Spec); diff != "" {
				t.Errorf("spec after defaulting (-want +got):\n%s", diff)
			}
			if diff := gocmp.Diff(wantMeta, m.ObjectMeta); diff != "" {
				t.Errorf("metadata changed by defaulting (-want +got):\n%s", diff)
			}
			if diff := gocmp.Diff(wantStatus, m.Status); diff != "" {
				t.Errorf("status changed by defaulting (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultMemcachedDoesNotShareDefaults(t *testing.T) {
	first, second := memcached(nil, nil), memcached(nil, nil)
	Memcached.Default(first)
	Memcached.Default(second)

	*first.Spec.Size = 7
	*first.Spec.ContainerPort = 7

	if got := *second.Spec.Size; got != 1 {
		t.Errorf("second Memcached's size = %d after editing the first's, want 1: defaults share a pointer", got)
	}
	if got := *second.Spec.ContainerPort; got != 11211 {
		t.Errorf("second Memcached's containerPort = %d after editing the first's, want 11211: defaults share a pointer", got)
	}
}

func TestValidateMemcached(t *testing.T) {
	tests := []struct {
		name          string
		size          *int32
		containerPort *int32
		wantErrs      field.ErrorList
	}{
		{name: "size -1", size: ptr.To[int32](-1), wantErrs: field.ErrorList{invalid("spec.size", int32(-1), sizeDetail)}},
		{name: "size 0", size: ptr.To[int32](0), wantErrs: field.ErrorList{invalid("spec.size", int32(0), sizeDetail)}},
		{name: "size 1", size: ptr.To[int32](1)},
		{name: "size 2", size: ptr.To[int32](2)},
		{name: "size 3", size: ptr.To[int32](3)},
		{name: "size 4", size: ptr.To[int32](4), wantErrs: field.ErrorList{invalid("spec.size", int32(4), sizeDetail)}},
		{name: "unset size is left to defaulting", size: nil},
		{name: "containerPort 0", containerPort: ptr.To[int32](0), wantErrs: field.ErrorList{invalid("spec.containerPort", int32(0), portDetail)}},
		{name: "containerPort 1", containerPort: ptr.To[int32](1)},
		{name: "containerPort 65535", containerPort: ptr.To[int32](65535)},
		{name: "containerPort 65536", containerPort: ptr.To[int32](65536), wantErrs: field.ErrorList{invalid("spec.containerPort", int32(65536), portDetail)}},
		{name: "unset containerPort is left to defaulting", containerPort: nil},
		{name: "both set and valid", size: ptr.To[int32](3), containerPort: ptr.To[int32](11211)},
		{
			name:          "size and containerPort both bad give both errors in field order",
			size:          ptr.To[int32](4),
			containerPort: ptr.To[int32](0),
			wantErrs: field.ErrorList{
				invalid("spec.size", int32(4), sizeDetail),
				invalid("spec.containerPort", int32(0), portDetail),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := memcached(tc.size, tc.containerPort)
			before := m.DeepCopy()

			gotErrs, gotWarnings := Memcached.Validate(nil, m, nil)

			if diff := gocmp.Diff(tc.wantErrs, gotErrs, compareFieldErrors, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if len(gotWarnings) != 0 {
				t.Errorf("warnings = %q, want none on create", gotWarnings)
			}
			if diff := gocmp.Diff(before, m); diff != "" {
				t.Errorf("validation changed the object (-before +after):\n%s", diff)
			}
		})
	}
}

func TestValidateMemcachedUpdate(t *testing.T) {
	tests := []struct {
		name         string
		old, new     *cachev1alpha1.Memcached
		wantErrs     field.ErrorList
		wantWarnings admission.Warnings
	}{
		{
			name:     "3 to 4 is refused",
			old:      memcached(ptr.To[int32](3), ptr.To[int32](11211)),
			new:      memcached(ptr.To[int32](4), ptr.To[int32](11211)),
			wantErrs: field.ErrorList{invalid("spec.size", int32(4), sizeDetail)},
		},
		{
			name: "3 to 1 is allowed",
			old:  memcached(ptr.To[int32](3), ptr.To[int32](11211)),
			new:  memcached(ptr.To[int32](1), ptr.To[int32](11211)),
		},
		{
			name: "1 to 3 is allowed",
			old:  memcached(ptr.To[int32](1), ptr.To[int32](11211)),
			new:  memcached(ptr.To[int32](3), ptr.To[int32](11211)),
		},
		{
			name:         "7 to 4 is a decrease, allowed with a warning",
			old:          memcached(ptr.To[int32](7), ptr.To[int32](11211)),
			new:          memcached(ptr.To[int32](4), ptr.To[int32](11211)),
			wantWarnings: admission.Warnings{size4Warning},
		},
		{
			name: "7 to 3 is allowed without a warning",
			old:  memcached(ptr.To[int32](7), ptr.To[int32](11211)),
			new:  memcached(ptr.To[int32](3), ptr.To[int32](11211)),
		},
		{
			// A pool stored above the range before the rule existed must stay editable: the
			// violation is the old object's, and the controller's finalizer update changes nothing.
			name:         "7 kept unchanged is allowed with a warning",
			old:          memcached(ptr.To[int32](7), ptr.To[int32](11211)),
			new:          memcached(ptr.To[int32](7), ptr.To[int32](11211)),
			wantWarnings: admission.Warnings{size7Warning},
		},
		{
			name:         "7 kept while containerPort changes is allowed with a warning",
			old:          memcached(ptr.To[int32](7), ptr.To[int32](11211)),
			new:          memcached(ptr.To[int32](7), ptr.To[int32](8080)),
			wantWarnings: admission.Warnings{size7Warning},
		},
		{
			name:     "7 to 8 is refused",
			old:      memcached(ptr.To[int32](7), ptr.To[int32](11211)),
			new:      memcached(ptr.To[int32](8), ptr.To[int32](11211)),
			wantErrs: field.ErrorList{invalid("spec.size", int32(8), sizeDetail)},
		},
		{
			name:     "2 to 0 is refused",
			old:      memcached(ptr.To[int32](2), ptr.To[int32](11211)),
			new:      memcached(ptr.To[int32](0), ptr.To[int32](11211)),
			wantErrs: field.ErrorList{invalid("spec.size", int32(0), sizeDetail)},
		},
		{
			name:     "7 to 0 is a decrease below the range, refused",
			old:      memcached(ptr.To[int32](7), ptr.To[int32](11211)),
			new:      memcached(ptr.To[int32](0), ptr.To[int32](11211)),
			wantErrs: field.ErrorList{invalid("spec.size", int32(0), sizeDetail)},
		},
		{
			name:     "1 to -1 is refused",
			old:      memcached(ptr.To[int32](1), ptr.To[int32](11211)),
			new:      memcached(ptr.To[int32](-1), ptr.To[int32](11211)),
			wantErrs: field.ErrorList{invalid("spec.size", int32(-1), sizeDetail)},
		},
		{
			name:     "unset stored size to 4 is refused",
			old:      memcached(nil, ptr.To[int32](11211)),
			new:      memcached(ptr.To[int32](4), ptr.To[int32](11211)),
			wantErrs: field.ErrorList{invalid("spec.size", int32(4), sizeDetail)},
		},
		{
			name: "bad containerPort kept while size changes is allowed",
			old:  memcached(ptr.To[int32](1), ptr.To[int32](0)),
			new:  memcached(ptr.To[int32](2), ptr.To[int32](0)),
		},
		{
			name:     "bad containerPort changed to another bad one is refused",
			old:      memcached(ptr.To[int32](1), ptr.To[int32](0)),
			new:      memcached(ptr.To[int32](1), ptr.To[int32](65536)),
			wantErrs: field.ErrorList{invalid("spec.containerPort", int32(65536), portDetail)},
		},
		{
			name: "bad containerPort fixed is allowed",
			old:  memcached(ptr.To[int32](1), ptr.To[int32](0)),
			new:  memcached(ptr.To[int32](1), ptr.To[int32](11211)),
		},
		{
			name:     "good containerPort made bad is refused",
			old:      memcached(ptr.To[int32](1), ptr.To[int32](11211)),
			new:      memcached(ptr.To[int32](1), ptr.To[int32](0)),
			wantErrs: field.ErrorList{invalid("spec.containerPort", int32(0), portDetail)},
		},
		{
			name: "kept bad containerPort does not excuse a bad size",
			old:  memcached(ptr.To[int32](3), ptr.To[int32](0)),
			new:  memcached(ptr.To[int32](4), ptr.To[int32](0)),
			wantErrs: field.ErrorList{
				invalid("spec.size", int32(4), sizeDetail),
			},
		},
		{
			name:         "decrease above the range with a kept bad containerPort warns only",
			old:          memcached(ptr.To[int32](7), ptr.To[int32](0)),
			new:          memcached(ptr.To[int32](4), ptr.To[int32](0)),
			wantWarnings: admission.Warnings{size4Warning},
		},
		{
			name: "size and containerPort both made bad give both errors in field order",
			old:  memcached(ptr.To[int32](3), ptr.To[int32](11211)),
			new:  memcached(ptr.To[int32](4), ptr.To[int32](0)),
			wantErrs: field.ErrorList{
				invalid("spec.size", int32(4), sizeDetail),
				invalid("spec.containerPort", int32(0), portDetail),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldBefore, newBefore := tc.old.DeepCopy(), tc.new.DeepCopy()

			gotErrs, gotWarnings := Memcached.Validate(tc.old, tc.new, nil)

			if diff := gocmp.Diff(tc.wantErrs, gotErrs, compareFieldErrors, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := gocmp.Diff(tc.wantWarnings, withoutRuleIDs(t, gotWarnings), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if diff := gocmp.Diff(oldBefore, tc.old); diff != "" {
				t.Errorf("validation changed the old object (-before +after):\n%s", diff)
			}
			if diff := gocmp.Diff(newBefore, tc.new); diff != "" {
				t.Errorf("validation changed the new object (-before +after):\n%s", diff)
			}
		})
	}
}

func TestMemcachedValidatorReturnsInvalidStatus(t *testing.T) {
	ctx := context.Background()
	bad := memcached(ptr.To[int32](4), ptr.To[int32](0))
	bad.Name = "bad-pool"

	warnings, err := memcachedValidator().ValidateCreate(ctx, bad)

	if len(warnings) != 0 {
		t.Errorf("warnings = %q, want none", warnings)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("ValidateCreate error = %#v, want an apierrors.APIStatus", err)
	}
	want := metav1.Status{
		Status: metav1.StatusFailure,
		Code:   http.StatusUnprocessableEntity,
		Reason: metav1.StatusReasonInvalid,
		Message: `Memcached.cache.seedlabs.dev "bad-pool" is invalid: [` +
			`spec.size: Invalid value: 4: must be between 1 and 3 (rule memcached.size.range), ` +
			`spec.containerPort: Invalid value: 0: must be between 1 and 65535 (rule memcached.container-port.range)]`,
		Details: &metav1.StatusDetails{
			Name:  "bad-pool",
			Group: "cache.seedlabs.dev",
			Kind:  "Memcached",
			Causes: []metav1.StatusCause{
				{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.size", Message: "Invalid value: 4: " + sizeDetail + " (rule memcached.size.range)"},
				{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.containerPort", Message: "Invalid value: 0: " + portDetail + " (rule memcached.container-port.range)"},
			},
		},
	}
	if diff := gocmp.Diff(want, status.Status()); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}

	t.Run("valid object", func(t *testing.T) {
		warnings, err := memcachedValidator().ValidateCreate(ctx, memcached(ptr.To[int32](3), ptr.To[int32](11211)))
		if err != nil || len(warnings) != 0 {
			t.Errorf("ValidateCreate = %q, %v, want no warnings and no error", warnings, err)
		}
	})

	t.Run("update from 3 to 4", func(t *testing.T) {
		_, err := memcachedValidator().ValidateUpdate(ctx,
			memcached(ptr.To[int32](3), ptr.To[int32](11211)), memcached(ptr.To[int32](4), ptr.To[int32](11211)))
		var status apierrors.APIStatus
		if !errors.As(err, &status) {
			t.Fatalf("ValidateUpdate error = %#v, want an apierrors.APIStatus", err)
		}
		want := metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusUnprocessableEntity,
			Reason:  metav1.StatusReasonInvalid,
			Message: `Memcached.cache.seedlabs.dev "pool" is invalid: spec.size: Invalid value: 4: must be between 1 and 3 (rule memcached.size.range)`,
			Details: &metav1.StatusDetails{
				Name:  "pool",
				Group: "cache.seedlabs.dev",
				Kind:  "Memcached",
				Causes: []metav1.StatusCause{
					{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.size", Message: "Invalid value: 4: " + sizeDetail + " (rule memcached.size.range)"},
				},
			},
		}
		if diff := gocmp.Diff(want, status.Status()); diff != "" {
			t.Errorf("status (-want +got):\n%s", diff)
		}
	})

	t.Run("update decreasing 7 to 4", func(t *testing.T) {
		warnings, err := memcachedValidator().ValidateUpdate(ctx,
			memcached(ptr.To[int32](7), ptr.To[int32](11211)), memcached(ptr.To[int32](4), ptr.To[int32](11211)))
		if err != nil {
			t.Errorf("ValidateUpdate error = %v, want nil", err)
		}
		if diff := gocmp.Diff(admission.Warnings{size4Warning + " (rule memcached.size.scale-down)"}, warnings); diff != "" {
			t.Errorf("warnings (-want +got):\n%s", diff)
		}
	})

	t.Run("delete is always allowed", func(t *testing.T) {
		warnings, err := memcachedValidator().ValidateDelete(ctx, bad)
		if err != nil || warnings != nil {
			t.Errorf("ValidateDelete = %q, %v, want no warnings and no error", warnings, err)
		}
	})

	// A patch, an apply and an edit all reach the webhook as an UPDATE of the whole object.
	t.Run("update through the admission handler", func(t *testing.T) {
		handler := testWebhooks(ImagePolicy{})[memcachedKind.validate]
		req := memcachedRequest(admissionv1.Update,
			`{"apiVersion":"cache.seedlabs.dev/v1alpha1","kind":"Memcached",`+
				`"metadata":{"name":"pool","namespace":"default"},"spec":{"size":4,"containerPort":11211}}`,
			`{"apiVersion":"cache.seedlabs.dev/v1alpha1","kind":"Memcached",`+
				`"metadata":{"name":"pool","namespace":"default"},"spec":{"size":3,"containerPort":11211}}`)

		resp, _ := admit(t, handler, req)

		if resp.Allowed {
			t.Fatalf("response allowed, want denied")
		}
		if resp.Result == nil {
			t.Fatalf("response has no result")
		}
		if resp.Result.Code != http.StatusUnprocessableEntity || resp.Result.Reason != metav1.StatusReasonInvalid {
			t.Errorf("result code, reason = %d, %q, want 422, %q", resp.Result.Code, resp.Result.Reason, metav1.StatusReasonInvalid)
		}
		wantDetails := &metav1.StatusDetails{
			Name:  "pool",
			Group: "cache.seedlabs.dev",
			Kind:  "Memcached",
			Causes: []metav1.StatusCause{
				{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.size", Message: "Invalid value: 4: " + sizeDetail + " (rule memcached.size.range)"},
			},
		}
		if diff := gocmp.Diff(wantDetails, resp.Result.Details); diff != "" {
			t.Errorf("result details (-want +got):\n%s", diff)
		}
	})
}

func TestMemcachedScaleValidator(t *testing.T) {
	handler := newMemcachedScaleValidator(clientgoscheme.Scheme, judge{})

	allowed := func(warnings ...string) admission.Response {
		return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
			Allowed:  true,
			Result:   &metav1.Status{Code: http.StatusOK},
			Warnings: warnings,
		}}
	}
	deniedSize := func(size int32) admission.Response {
		return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
			Allowed: false,
			Result: &metav1.Status{
				Status:  metav1.StatusFailure,
				Code:    http.StatusUnprocessableEntity,
				Reason:  metav1.StatusReasonInvalid,
				Message: fmt.Sprintf(`Memcached.cache.seedlabs.dev "pool" is invalid: spec.size: Invalid value: %d: must be between 1 and 3 (rule memcached.size.range)`, size),
				Details: &metav1.StatusDetails{
					Name:  "pool",
					Group: "cache.seedlabs.dev",
					Kind:  "Memcached",
					Causes: []metav1.StatusCause{{
						Type:    metav1.CauseTypeFieldValueInvalid,
						Field:   "spec.size",
						Message: fmt.Sprintf("Invalid value: %d: must be between 1 and 3 (rule memcached.size.range)", size),
					}},
				},
			},
		}}
	}
	deploymentsGVR := metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

	tests := []struct {
		name        string
		operation   admissionv1.Operation
		resource    *metav1.GroupVersionResource
		subResource string
		object      string
		oldObject   string
		want        admission.Response
	}{
		{
			name:        "2 to 4 is refused",
			operation:   admissionv1.Update,
			subResource: "scale",
			object:      scaleJSON(4),
			oldObject:   scaleJSON(2),
			want:        deniedSize(4),
		},
		{
			name:        "3 to 4 is refused",
			operation:   admissionv1.Update,
			subResource: "scale",
			object:      scaleJSON(4),
			oldObject:   scaleJSON(3),
			want:        deniedSize(4),
		},
		{
			name:        "3 to 1 is allowed",
			operation:   admissionv1.Update,
			subResource: "scale",
			object:      scaleJSON(1),
			oldObject:   scaleJSON(3),
			want:        allowed(),
		},
		{
			name:        "1 to 3 is allowed",
			operation:   admissionv1.Update,
			subResource: "scale",
			object:      scaleJSON(3),
			oldObject:   scaleJSON(1),
			want:        allowed(),
		},
		{
			name:        "7 to 4 is a decrease, allowed with a warning",
			operation:   admissionv1.Update,
			subResource: "scale",
			object:      scaleJSON(4),
			oldObject:   scaleJSON(7),
			want:        allowed(size4Warning + " (rule memcached.size.scale-down)"),
		},
		{
			name:        "7 to 7 is a no-op scale of a legacy pool, allowed with a warning",
			operation:   admissionv1.Update,
			subResource: "scale",
			object:      scaleJSON(7),
			oldObject:   scaleJSON(7),
			want:        allowed(size7Warning + " (rule memcached.size.scale-down)"),
		},
		{
			name:        "7 to 8 is refused",
			operation:   admissionv1.Update,
			subResource: "scale",
			object:      scaleJSON(8),
			oldObject:   scaleJSON(7),
			want:        deniedSize(8),
		},
		{
			name:        "1 to 0 is refused",
			operation:   admissionv1.Update,
			subResource: "scale",
			object:      scaleJSON(0),
			oldObject:   scaleJSON(1),
			want:        deniedSize(0),
		},
		{
			name:        "7 to 0 is a decrease below the range, refused",
			operation:   admissionv1.Update,
			subResource: "scale",
			object:      scaleJSON(0),
			oldObject:   scaleJSON(7),
			want:        deniedSize(0),
		},
		{
			name:        "status subresource update is allowed untouched",
			operation:   admissionv1.Update,
			subResource: "status",
			object: `{"apiVersion":"cache.seedlabs.dev/v1alpha1","kind":"Memcached",` +
				`"metadata":{"name":"pool","namespace":"default"},"spec":{"size":9},"status":{"replicas":9}}`,
			oldObject: `{"apiVersion":"cache.seedlabs.dev/v1alpha1","kind":"Memcached",` +
				`"metadata":{"name":"pool","namespace":"default"},"spec":{"size":9},"status":{"replicas":1}}`,
			want: allowed(),
		},
		{
			name:      "update of the Memcached itself is left to the main webhook",
			operation: admissionv1.Update,
			object: `{"apiVersion":"cache.seedlabs.dev/v1alpha1","kind":"Memcached",` +
				`"metadata":{"name":"pool","namespace":"default"},"spec":{"size":9}}`,
			oldObject: `{"apiVersion":"cache.seedlabs.dev/v1alpha1","kind":"Memcached",` +
				`"metadata":{"name":"pool","namespace":"default"},"spec":{"size":1}}`,
			want: allowed(),
		},
		{
			name:        "scale of another resource is allowed untouched",
			operation:   admissionv1.Update,
			resource:    &deploymentsGVR,
			subResource: "scale",
			object:      scaleJSON(10),
			oldObject:   scaleJSON(2),
			want:        allowed(),
		},
		{
			name:        "create is allowed untouched",
			operation:   admissionv1.Create,
			subResource: "scale",
			object:      scaleJSON(10),
			want:        allowed(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := scaleRequest(tc.operation, tc.subResource, tc.object, tc.oldObject)
			if tc.resource != nil {
				req.Resource = *tc.resource
			}

			got := handler.Handle(context.Background(), req)

			if diff := gocmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}

	undecodable := []struct {
		name              string
		object, oldObject string
	}{
		{name: "garbage object", object: `{"spec":{"replicas":`, oldObject: scaleJSON(2)},
		{name: "garbage old object", object: scaleJSON(2), oldObject: `not json`},
		{name: "missing old object", object: scaleJSON(2)},
	}
	for _, tc := range undecodable {
		t.Run(tc.name+" is a bad request", func(t *testing.T) {
			got := handler.Handle(context.Background(), scaleRequest(admissionv1.Update, "scale", tc.object, tc.oldObject))

			if got.Allowed {
				t.Fatalf("response allowed, want denied")
			}
			if got.Result == nil || got.Result.Code != http.StatusBadRequest || got.Result.Message == "" {
				t.Errorf("result = %+v, want code 400 with the decoding error as message", got.Result)
			}
		})
	}
}

func TestMemcachedDefaultingPatch(t *testing.T) {
	handler := testWebhooks(ImagePolicy{})[memcachedKind.mutate]

	bothDefaults := []jsonpatch.Operation{
		{Operation: "add", Path: "/spec/containerPort", Value: float64(11211)},
		{Operation: "add", Path: "/spec/size", Value: float64(1)},
	}
	tests := []struct {
		name      string
		operation admissionv1.Operation
		object    string
		oldObject string
		want      []jsonpatch.Operation
	}{
		{
			name:      "empty spec gets both defaults and nothing else",
			operation: admissionv1.Create,
			object: `{"apiVersion":"cache.seedlabs.dev/v1alpha1","kind":"Memcached",` +
				`"metadata":{"name":"pool","namespace":"default"},"spec":{}}`,
			want: bothDefaults,
		},
		{
			name:      "missing spec gets one operation adding the defaulted spec",
			operation: admissionv1.Create,
			object: `{"apiVersion":"cache.seedlabs.dev/v1alpha1","kind":"Memcached",` +
				`"metadata":{"name":"pool","namespace":"default"}}`,
			want: []jsonpatch.Operation{{
				Operation: "add",
				Path:      "/spec",
				Value:     map[string]any{"size": float64(1), "containerPort": float64(11211)},
			}},
		},
		{
			name:      "fully specified object is not patched",
			operation: admissionv1.Create,
			object: `{"apiVersion":"cache.seedlabs.dev/v1alpha1","kind":"Memcached",` +
				`"metadata":{"name":"pool","namespace":"default"},"spec":{"size":3,"containerPort":8080}}`,
		},
		{
			name:      "only the unset field is added",
			operation: admissionv1.Create,
			object: `{"apiVersion":"cache.seedlabs.dev/v1alpha1","kind":"Memcached",` +
				`"metadata":{"name":"pool","namespace":"default"},"spec":{"size":2}}`,
			want: []jsonpatch.Operation{{Operation: "add", Path: "/spec/containerPort", Value: float64(11211)}},
		},
		{
			name:      "invalid values are left for validation",
			operation: admissionv1.Create,
			object: `{"apiVersion":"cache.seedlabs.dev/v1alpha1","kind":"Memcached",` +
				`"metadata":{"name":"pool","namespace":"default"},"spec":{"size":0,"containerPort":0}}`,
		},
		{
			name:      "empty status and unknown fields get no removal operations",
			operation: admissionv1.Create,
			object: `{"apiVersion":"cache.seedlabs.dev/v1alpha1","kind":"Memcached",` +
				`"metadata":{"name":"pool","namespace":"default","creationTimestamp":null},` +
				`"spec":{"futureField":true},"status":{}}`,
			want: bothDefaults,
		},
		{
			name:      "update that drops the defaulted fields gets them back",
			operation: admissionv1.Update,
			object: `{"apiVersion":"cache.seedlabs.dev/v1alpha1","kind":"Memcached",` +
				`"metadata":{"name":"pool","namespace":"default","resourceVersion":"7"},"spec":{}}`,
			oldObject: `{"apiVersion":"cache.seedlabs.dev/v1alpha1","kind":"Memcached",` +
				`"metadata":{"name":"pool","namespace":"default","resourceVersion":"7"},"spec":{"size":3,"containerPort":8080}}`,
			want: bothDefaults,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, ops := admit(t, handler, memcachedRequest(tc.operation, tc.object, tc.oldObject))

			if !resp.Allowed {
				t.Fatalf("response denied with %+v, want allowed", resp.Result)
			}
			got := slices.SortedFunc(slices.Values(ops), func(a, b jsonpatch.Operation) int {
				return cmp.Compare(a.Path, b.Path)
			})
			if diff := gocmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("patch operations (-want +got):\n%s", diff)
			}
			var wantPatchType *admissionv1.PatchType
			if len(tc.want) > 0 {
				wantPatchType = ptr.To(admissionv1.PatchTypeJSONPatch)
			}
			if diff := gocmp.Diff(wantPatchType, resp.PatchType); diff != "" {
				t.Errorf("patch type (-want +got):\n%s", diff)
			}
		})
	}
}

// scaleJSON is the autoscaling/v1 Scale of the Memcached "pool" asking for replicas instances.
func scaleJSON(replicas int32) string {
	return fmt.Sprintf(`{"kind":"Scale","apiVersion":"autoscaling/v1",`+
		`"metadata":{"name":"pool","namespace":"default","uid":"5d2e1c1a-0000-4000-8000-000000000001","resourceVersion":"42"},`+
		`"spec":{"replicas":%d},"status":{"replicas":2,"selector":"app.kubernetes.io/instance=pool"}}`, replicas)
}
