package webhooks

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// convert posts body to the conversion webhook and returns its HTTP status and review.
func convert(tb testing.TB, body []byte) (int, apiextensionsv1.ConversionReview) {
	tb.Helper()
	h := Handlers(testScheme, Options{})[ConvertPath]
	req := httptest.NewRequest(http.MethodPost, ConvertPath, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var review apiextensionsv1.ConversionReview
	if rec.Code == http.StatusOK {
		if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil || review.Response == nil {
			tb.Fatalf("the reply %q to %q is not a review with a response: %v", rec.Body.String(), body, err)
		}
	}
	return rec.Code, review
}

func conversionReview(tb testing.TB, desired string, objects ...string) []byte {
	tb.Helper()
	review := apiextensionsv1.ConversionReview{Request: &apiextensionsv1.ConversionRequest{UID: types.UID("u"), DesiredAPIVersion: desired}}
	review.APIVersion, review.Kind = "apiextensions.k8s.io/v1", "ConversionReview"
	for _, o := range objects {
		review.Request.Objects = append(review.Request.Objects, runtime.RawExtension{Raw: []byte(o)})
	}
	body, err := json.Marshal(review)
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

const (
	alphaWelcome = `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome","metadata":{"name":"w","namespace":"ns","annotations":{"a":"b"}},"spec":{"name":"Ada","password":"hunter2","port":8088}}`
	hubWelcome   = `{"apiVersion":"auth.seedlabs.dev/v1","kind":"Welcome","metadata":{"name":"w","namespace":"ns","annotations":{"a":"b","auth.seedlabs.dev/conversion-data":"{\"spec\":{\"password\":\"hunter2\"}}"}},"spec":{"name":"Ada","port":8088}}`
)

// The conversion webhook, as the manager serves it, converts a Welcome both ways through its hub.
func TestConvertWelcome(t *testing.T) {
	for _, tc := range []struct{ desired, from, want string }{
		{"auth.seedlabs.dev/v1", alphaWelcome, hubWelcome},
		{"auth.seedlabs.dev/v1alpha1", hubWelcome, alphaWelcome},
	} {
		code, review := convert(t, conversionReview(t, tc.desired, tc.from, tc.from))
		if code != http.StatusOK || review.Response.Result.Status != "Success" || review.Response.UID != "u" {
			t.Fatalf("to %s: HTTP %d, %+v", tc.desired, code, review.Response)
		}
		if len(review.Response.ConvertedObjects) != 2 {
			t.Fatalf("to %s: %d objects, want 2", tc.desired, len(review.Response.ConvertedObjects))
		}
		for _, got := range review.Response.ConvertedObjects {
			var g, w map[string]any
			if err := json.Unmarshal(got.Raw, &g); err != nil {
				t.Fatal(err)
			}
			_ = json.Unmarshal([]byte(tc.want), &w)
			delete(g["metadata"].(map[string]any), "creationTimestamp")
			delete(g, "status")
			if gj, wj := asJSON(g), asJSON(w); gj != wj {
				t.Errorf("to %s:\n got %s\nwant %s", tc.desired, gj, wj)
			}
		}
	}
}

// A ConversionReview past MaxConversionReviewBytes is refused, not read whole.
func TestConvertRefusesAnOversizedReview(t *testing.T) {
	padding := strings.Repeat("x", MaxConversionReviewBytes)
	big := `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome","metadata":{"name":"w","namespace":"ns","annotations":{"pad":"` + padding + `"}},"spec":{"name":"Ada"}}`
	code, _ := convert(t, conversionReview(t, "auth.seedlabs.dev/v1", big))
	if code != http.StatusBadRequest {
		t.Fatalf("HTTP %d to a review of %d bytes, want 400", code, len(big))
	}
	small := strings.Replace(big, padding, padding[:MaxConversionReviewBytes-1024], 1)
	if code, review := convert(t, conversionReview(t, "auth.seedlabs.dev/v1", small)); code != http.StatusOK || review.Response.Result.Status != "Success" {
		t.Fatalf("HTTP %d, %+v to a review just under the cap, want it converted", code, review.Response)
	}
}

// FuzzConvertReview sends any body to the conversion webhook: it answers 400, or a review with
// the request's uid whose every converted object is at the version asked for; it never panics.
func FuzzConvertReview(f *testing.F) {
	for _, seed := range [][]byte{
		conversionReview(f, "auth.seedlabs.dev/v1", alphaWelcome),
		conversionReview(f, "auth.seedlabs.dev/v1alpha1", hubWelcome),
		conversionReview(f, "auth.seedlabs.dev/v1alpha1", alphaWelcome),
		conversionReview(f, "cache.seedlabs.dev/v1", alphaWelcome),
		conversionReview(f, "auth.seedlabs.dev/v1", `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome","metadata":{}}`),
		[]byte(""), []byte("{"), []byte("null"), []byte(`{"request":null}`), []byte(`{"request":{"uid":"u"}}`),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		code, review := convert(t, body)
		if code == http.StatusBadRequest {
			return
		}
		if code != http.StatusOK {
			t.Fatalf("HTTP %d to %q", code, body)
		}
		var sent apiextensionsv1.ConversionReview
		_ = json.Unmarshal(body, &sent)
		if sent.Request != nil && review.Response.UID != sent.Request.UID {
			t.Fatalf("the reply carries uid %q, the request %q", review.Response.UID, sent.Request.UID)
		}
		if review.Response.Result.Status != "Success" {
			return
		}
		for _, o := range review.Response.ConvertedObjects {
			var tm struct {
				APIVersion string `json:"apiVersion"`
			}
			if err := json.Unmarshal(o.Raw, &tm); err != nil || tm.APIVersion != sent.Request.DesiredAPIVersion {
				t.Fatalf("converted %s, asked for %s: %v", o.Raw, sent.Request.DesiredAPIVersion, err)
			}
		}
		if sent.Request != nil && len(review.Response.ConvertedObjects) != len(sent.Request.Objects) {
			t.Fatalf("%d objects converted of %d", len(review.Response.ConvertedObjects), len(sent.Request.Objects))
		}
	})
}
