package v1alpha1_test

import (
	"encoding/json"
	"math/rand"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
)

// roundTrips is how many random Welcomes each round trip converts.
const roundTrips = 10000

// filler fills Welcomes of either version at random, with metadata as the API server holds it
// (apimachinery's fuzzer functions for ObjectMeta), and never the conversion-data annotation,
// which is the conversion's.
func filler(t *testing.T) *randfill.Filler {
	t.Helper()
	s := runtime.NewScheme()
	if err := authv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := authv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(rand.Int63()), serializer.NewCodecFactory(s))
}

func withoutConversionData(meta *metav1.ObjectMeta) {
	delete(meta.Annotations, authv1.ConversionDataAnnotation)
	if len(meta.Annotations) == 0 {
		meta.Annotations = nil
	}
}

// A v1alpha1 Welcome stored at v1 and read back at v1alpha1, as kube-apiserver does once v1 is the
// storage version, loses nothing: the password goes through the annotation and does not show.
func TestWelcomeSpokeHubSpoke(t *testing.T) {
	f := filler(t)
	for range roundTrips {
		spoke := &authv1alpha1.Welcome{}
		f.Fill(spoke)
		withoutConversionData(&spoke.ObjectMeta)
		hub := &authv1.Welcome{}
		if err := spoke.DeepCopy().ConvertTo(hub); err != nil {
			t.Fatalf("v1alpha1 to v1: %v", err)
		}
		back := &authv1alpha1.Welcome{}
		if err := back.ConvertFrom(hub); err != nil {
			t.Fatalf("v1 to v1alpha1: %v", err)
		}
		if !apiequality.Semantic.DeepEqual(spoke, back) {
			t.Fatalf("v1alpha1 to v1 and back changed the Welcome:\nbefore %#v\nafter  %#v", spoke, back)
		}
	}
}

// A v1 Welcome read at v1alpha1 and written back, as an old client does, is unchanged.
func TestWelcomeHubSpokeHub(t *testing.T) {
	f := filler(t)
	for range roundTrips {
		hub := &authv1.Welcome{}
		f.Fill(hub)
		withoutConversionData(&hub.ObjectMeta)
		var carries bool // half of them carry a v1alpha1 password
		f.Fill(&carries)
		if carries {
			var s string
			f.Fill(&s)
			if s != "" {
				data, _ := json.Marshal(map[string]any{"spec": map[string]string{"password": s}})
				metav1.SetMetaDataAnnotation(&hub.ObjectMeta, authv1.ConversionDataAnnotation, string(data))
			}
		}
		spoke := &authv1alpha1.Welcome{}
		if err := spoke.ConvertFrom(hub.DeepCopy()); err != nil {
			t.Fatalf("v1 to v1alpha1: %v", err)
		}
		if _, ok := spoke.Annotations[authv1.ConversionDataAnnotation]; ok {
			t.Fatalf("the v1alpha1 view shows the conversion-data annotation: %v", spoke.Annotations)
		}
		back := &authv1.Welcome{}
		if err := spoke.ConvertTo(back); err != nil {
			t.Fatalf("v1alpha1 to v1: %v", err)
		}
		if !apiequality.Semantic.DeepEqual(hub, back) {
			t.Fatalf("v1 to v1alpha1 and back changed the Welcome:\nbefore %#v\nafter  %#v", hub, back)
		}
	}
}

// A Welcome of metadata only, as a LIST's partial objects or a spec kube-apiserver pruned, converts.
func TestWelcomeMetadataOnly(t *testing.T) {
	f := filler(t)
	for range roundTrips / 10 {
		spoke := &authv1alpha1.Welcome{}
		f.Fill(&spoke.ObjectMeta)
		withoutConversionData(&spoke.ObjectMeta)
		hub := &authv1.Welcome{}
		if err := spoke.ConvertTo(hub); err != nil {
			t.Fatal(err)
		}
		back := &authv1alpha1.Welcome{}
		if err := back.ConvertFrom(hub); err != nil {
			t.Fatal(err)
		}
		if !apiequality.Semantic.DeepEqual(spoke, back) {
			t.Fatalf("changed: %#v, %#v", spoke, back)
		}
	}
}

// The same Welcome converts to the same bytes, every time: kube-apiserver would see a difference
// as a change of the object.
func TestWelcomeConversionIsDeterministic(t *testing.T) {
	f := filler(t)
	for range roundTrips / 10 {
		spoke := &authv1alpha1.Welcome{}
		f.Fill(spoke)
		var first []byte
		for i := range 3 {
			hub := &authv1.Welcome{}
			if err := spoke.ConvertTo(hub); err != nil {
				t.Fatal(err)
			}
			data, err := json.Marshal(hub)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = data
			} else if string(data) != string(first) {
				t.Fatalf("two conversions of one Welcome differ:\n%s\n%s", first, data)
			}
		}
	}
}

// The conversion leaves the object it converts as it was: the webhook may hold both.
func TestWelcomeConversionLeavesItsSourceAlone(t *testing.T) {
	spoke := &authv1alpha1.Welcome{}
	spoke.Annotations = map[string]string{"a": "b"}
	spoke.Spec.Password = "secret"
	spoke.Spec.Groups = []string{"g"}
	before := spoke.DeepCopy()
	hub := &authv1.Welcome{}
	if err := spoke.ConvertTo(hub); err != nil {
		t.Fatal(err)
	}
	hub.Spec.Groups[0] = "changed"
	if !reflect.DeepEqual(spoke, before) {
		t.Fatalf("ConvertTo changed its source: %#v", spoke)
	}
	hubBefore := hub.DeepCopy()
	if err := (&authv1alpha1.Welcome{}).ConvertFrom(hub); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(hub, hubBefore) {
		t.Fatalf("ConvertFrom changed its source: %#v", hub)
	}
}

// Every field of v1alpha1's spec is v1's, of the same type, but the password, which the
// annotation carries; and v1 has no field v1alpha1 lacks. (The statuses are the same struct:
// the conversion converts one into the other, which compiles only while they are.)
func TestWelcomeSpecFieldsAreConverted(t *testing.T) {
	fields := func(v any) map[string]reflect.Type {
		out := map[string]reflect.Type{}
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			out[typ.Field(i).Name] = typ.Field(i).Type
		}
		return out
	}
	alpha, hub := fields(authv1alpha1.WelcomeSpec{}), fields(authv1.WelcomeSpec{})
	if alpha["Password"] == nil {
		t.Fatal("v1alpha1 has no Password: this test's list of fields carried by the annotation is stale")
	}
	delete(alpha, "Password")
	if !reflect.DeepEqual(alpha, hub) {
		t.Fatalf("the specs' fields differ beyond the password:\nv1alpha1 %v\nv1       %v", alpha, hub)
	}
}

func TestWelcomeConversionData(t *testing.T) {
	for _, tc := range []struct {
		annotation string
		password   string
		malformed  bool
	}{
		{`{"spec":{"password":"p"}}`, "p", false},
		{`{"spec":{}}`, "", false},
		{` {"spec": {"password": "p"}} `, "p", false},
		{`not json`, "", true},
		{`{"spec":{"password":"p"},"status":{}}`, "", true},
		{`{"spec":{"password":"p","user":"u"}}`, "", true},
		{`{"spec":{"password":"p"}}{}`, "", true},
		{`{"spec":{"password":1}}`, "", true},
		{``, "", true},
	} {
		hub := &authv1.Welcome{}
		hub.Annotations = map[string]string{authv1.ConversionDataAnnotation: tc.annotation, "kept": "yes"}
		hub.Spec.Name = "n"
		before := authv1alpha1.MalformedConversionData()
		spoke := &authv1alpha1.Welcome{}
		if err := spoke.ConvertFrom(hub); err != nil {
			t.Errorf("%q: %v, want no error for any annotation", tc.annotation, err)
		}
		if spoke.Spec.Password != tc.password || spoke.Spec.Name != "n" {
			t.Errorf("%q: password %q, name %q; want %q, %q", tc.annotation, spoke.Spec.Password, spoke.Spec.Name, tc.password, "n")
		}
		if want := map[string]string{"kept": "yes"}; !reflect.DeepEqual(spoke.Annotations, want) {
			t.Errorf("%q: annotations %v, want %v", tc.annotation, spoke.Annotations, want)
		}
		if counted := authv1alpha1.MalformedConversionData() - before; counted != map[bool]uint64{false: 0, true: 1}[tc.malformed] {
			t.Errorf("%q: counted malformed %d times", tc.annotation, counted)
		}
		before = authv1alpha1.MalformedConversionData()
		if got := authv1alpha1.PasswordOf(hub); got != spoke.Spec.Password {
			t.Errorf("%q: PasswordOf reads %q, ConvertFrom %q", tc.annotation, got, spoke.Spec.Password)
		}
		if counted := authv1alpha1.MalformedConversionData() - before; counted != 0 {
			t.Errorf("%q: PasswordOf counted malformed %d times; it converts nothing", tc.annotation, counted)
		}
	}
	if got := authv1alpha1.PasswordOf(nil); got != "" {
		t.Errorf("PasswordOf(nil) = %q", got)
	}
}

// A v1alpha1 Welcome's own annotation at the conversion-data key never outlives its password:
// without one, v1 carries no conversion data.
func TestWelcomeWithoutPasswordDropsConversionData(t *testing.T) {
	spoke := &authv1alpha1.Welcome{}
	spoke.Annotations = map[string]string{authv1.ConversionDataAnnotation: `{"spec":{"password":"stale"}}`}
	hub := &authv1.Welcome{}
	if err := spoke.ConvertTo(hub); err != nil {
		t.Fatal(err)
	}
	if hub.Annotations != nil {
		t.Fatalf("v1 carries %v", hub.Annotations)
	}
}

// FuzzWelcomeConversionData converts a v1 Welcome with any conversion-data annotation: never an
// error or a panic, every other field intact, and the password it read written back the same.
func FuzzWelcomeConversionData(f *testing.F) {
	for _, seed := range []string{`{"spec":{"password":"p"}}`, `{"spec":{}}`, `null`, `{`, `{"spec":{"password":"\u0000"}}`, "\xff"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, annotation string) {
		hub := &authv1.Welcome{}
		hub.Name, hub.Namespace = "w", "ns"
		hub.Annotations = map[string]string{authv1.ConversionDataAnnotation: annotation, "other": annotation}
		hub.Spec.Name, hub.Spec.Groups = "n", []string{annotation}
		spoke := &authv1alpha1.Welcome{}
		if err := spoke.ConvertFrom(hub.DeepCopy()); err != nil {
			t.Fatalf("ConvertFrom: %v", err)
		}
		if spoke.Name != "w" || spoke.Spec.Name != "n" || !reflect.DeepEqual(spoke.Spec.Groups, []string{annotation}) ||
			!reflect.DeepEqual(spoke.Annotations, map[string]string{"other": annotation}) {
			t.Fatalf("ConvertFrom changed more than the password: %#v", spoke)
		}
		back := &authv1.Welcome{}
		if err := spoke.ConvertTo(back); err != nil {
			t.Fatalf("ConvertTo: %v", err)
		}
		again := &authv1alpha1.Welcome{}
		if err := again.ConvertFrom(back); err != nil {
			t.Fatalf("ConvertFrom: %v", err)
		}
		if again.Spec.Password != spoke.Spec.Password {
			t.Fatalf("the password %q came back as %q", spoke.Spec.Password, again.Spec.Password)
		}
	})
}
