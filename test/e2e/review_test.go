//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	"github.com/seedlabs/webhook-operator/test/fixtures"
)

// webhookPort is the port the manager's webhook server listens on in its pod (the container port
// the webhook Service targets).
const webhookPort = "9443"

// deployObjectValidatePath is the DeployObject's validating webhook.
const deployObjectValidatePath = "/validate-app-seedlabs-dev-v1-deployobject"

// replicaReview is one AdmissionReview of a DeployObject's creation, sent to each replica's pod
// directly, as kube-apiserver sends it: with a client certificate of the cluster's
// WebhookClientCA, trusting the serving Secret's CA. Asking every replica, where a request through
// the Service reaches whichever one kube-apiserver's kept-alive connection leads to, shows what
// each of them holds.
type replicaReview struct {
	body   []byte
	client *http.Client
}

// newReplicaReview makes the review of creating the DeployObject name in namespace with image:
// the object as the mutating webhook defaults it (a server-side dry run of it with a pinned image,
// which stores nothing), then given image.
func newReplicaReview(ctx context.Context, namespace, name, image string) *replicaReview {
	GinkgoHelper()
	d := &appv1.DeployObject{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       appv1.DeployObjectSpec{Image: "nginx:1.27.0", Ports: []corev1.ServicePort{{Port: 80}}},
	}
	Expect(k8s.Create(ctx, d, client.DryRunAll)).To(Succeed(), "the dry run that defaults the reviewed DeployObject")
	d.Spec.Image = image
	d.SetGroupVersionKind(appv1.GroupVersion.WithKind("DeployObject"))
	object, err := json.Marshal(d)
	Expect(err).NotTo(HaveOccurred())
	kind := metav1.GroupVersionKind{Group: appv1.GroupVersion.Group, Version: appv1.GroupVersion.Version, Kind: "DeployObject"}
	resource := metav1.GroupVersionResource{Group: appv1.GroupVersion.Group, Version: appv1.GroupVersion.Version, Resource: "deployobjects"}
	body, err := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: types.UID("e2e-replica-review"), Kind: kind, Resource: resource, RequestKind: &kind, RequestResource: &resource,
			Name: name, Namespace: namespace, Operation: admissionv1.Create,
			UserInfo: authenticationv1.UserInfo{Username: "e2e"},
			Object:   runtime.RawExtension{Raw: object}, DryRun: ptr.To(true),
		},
	})
	Expect(err).NotTo(HaveOccurred())

	pair, err := kube.WebhookClientCA.NewClientPair(pkix.Name{CommonName: "e2e-replica-review"}, time.Hour)
	Expect(err).NotTo(HaveOccurred())
	certificate, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	Expect(err).NotTo(HaveOccurred())
	roots := x509.NewCertPool()
	Expect(roots.AppendCertsFromPEM(servingSecretData(ctx).Data["ca.crt"])).To(BeTrue(), "the serving Secret's ca.crt")
	return &replicaReview{body: body, client: &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{
			Certificates: []tls.Certificate{certificate},
			RootCAs:      roots,
			ServerName:   fixtures.WebhookService + "." + fixtures.Namespace + ".svc",
			MinVersion:   tls.VersionTLS12,
		}},
	}}
}

// onEachReplica sends the review to every ready replica and returns each one's answer, by pod.
func (r *replicaReview) onEachReplica(ctx context.Context, g Gomega) map[string]*admissionv1.AdmissionResponse {
	answers := map[string]*admissionv1.AdmissionResponse{}
	for _, pod := range expectManagerReady(ctx, g) {
		answers[pod.Name] = r.on(ctx, g, pod)
	}
	g.Expect(answers).NotTo(BeEmpty())
	return answers
}

// on sends the review to pod, ready or not, and returns its answer.
func (r *replicaReview) on(ctx context.Context, g Gomega, pod corev1.Pod) *admissionv1.AdmissionResponse {
	url := "https://" + net.JoinHostPort(pod.Status.PodIP, webhookPort) + deployObjectValidatePath
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(r.body))
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	g.Expect(err).NotTo(HaveOccurred(), "replica %s", pod.Name)
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	g.Expect(err).NotTo(HaveOccurred(), "replica %s", pod.Name)
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "replica %s: %s", pod.Name, data)
	review := &admissionv1.AdmissionReview{}
	g.Expect(json.Unmarshal(data, review)).To(Succeed(), "replica %s: %s", pod.Name, data)
	g.Expect(review.Response).NotTo(BeNil(), "replica %s: %s", pod.Name, data)
	g.Expect(review.Response.UID).To(Equal(types.UID("e2e-replica-review")), "replica %s", pod.Name)
	return review.Response
}
