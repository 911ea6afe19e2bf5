package webhooks

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// trivialAdmission is the baseline the handlers are compared with: a stdlib handler that decodes
// the AdmissionReview, admits it and answers with the request's uid, and nothing else.
var trivialAdmission = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
})

// BenchmarkHandlers serves the first valid sample of each kind, as a create, to its defaulting and
// validating webhooks, and the same review to the trivial stdlib handler, in one process, so
// that `benchstat` compares a change and the ratio to the baseline reads directly.
func BenchmarkHandlers(b *testing.B) {
	handlers := fuzzHandlers(b)
	for _, k := range []fuzzedKind{welcomeKind, memcachedKind, deployObjectKind} {
		sample := sampleSeeds(b, k.kind)[0]
		// The validating webhook sees the object as defaulting left it, as in the API server.
		defaulted := sample
		if patch := serveReview(b, handlers[k.mutate], admissionReviewBody(b, k, sample)).Response.Patch; len(patch) > 0 {
			p, err := jsonpatch.DecodePatch(patch)
			if err != nil {
				b.Fatal(err)
			}
			if defaulted, err = p.Apply(sample); err != nil {
				b.Fatal(err)
			}
		}
		for _, h := range []struct {
			name    string
			handler http.Handler
			body    []byte
		}{
			{"trivial", trivialAdmission, admissionReviewBody(b, k, sample)},
			{"mutate", handlers[k.mutate], admissionReviewBody(b, k, sample)},
			{"validate", handlers[k.validate], admissionReviewBody(b, k, defaulted)},
		} {
			body := h.body
			b.Run(k.kind+"/"+h.name, func(b *testing.B) {
				if reply := serveReview(b, h.handler, body); !reply.Response.Allowed {
					b.Fatalf("the sample is not admitted: %v", reply.Response.Result)
				}
				b.ReportAllocs()
				for b.Loop() {
					serveReview(b, h.handler, body)
				}
			})
		}
	}
}

func admissionReviewBody(tb testing.TB, k fuzzedKind, object []byte) []byte {
	tb.Helper()
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "5a1c0b8e-0000-4000-8000-000000000001",
			Kind:      metav1.GroupVersionKind{Group: k.resource.Group, Version: k.resource.Version, Kind: k.kind},
			Resource:  k.resource,
			Namespace: "default",
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: object},
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

func serveReview(tb testing.TB, h http.Handler, body []byte) admissionv1.AdmissionReview {
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var reply admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &reply); err != nil || reply.Response == nil {
		tb.Fatalf("HTTP %d, reply %s: %v", rec.Code, rec.Body, err)
	}
	return reply
}
