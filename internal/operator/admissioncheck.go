package operator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
)

// CheckAdmission proves through the API server that both webhooks serve admission in namespace,
// as the chart's `helm test` hook runs it, with server-side dry runs that store nothing: a
// DeployObject of image whose port has no targetPort comes back with one, which only the mutating
// webhook fills (a schema cannot default one field to another); and the same with an impossible
// pull secret name is refused for the rule deployobject.image-pull-secrets.valid, which only the
// validating webhook holds, and which no AdmissionPolicy relaxes. It says what it saw either way.
func CheckAdmission(ctx context.Context, c client.Client, namespace, image string) (string, error) {
	object := func() *appv1.DeployObject {
		return &appv1.DeployObject{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: "admission-check-"},
			Spec:       appv1.DeployObjectSpec{Image: image, Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}},
		}
	}
	valid := object()
	// The check's RoleBinding was made a moment before it, and kube-apiserver's authorizer reads
	// bindings from its own informer: a refusal for RBAC is tried again, for up to 30 s.
	var err error
	if waited := wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err = c.Create(ctx, valid, client.DryRunAll)
		return !apierrors.IsForbidden(err), nil
	}); err == nil {
		err = waited
	}
	if err != nil {
		return "", fmt.Errorf("a valid DeployObject of %s in namespace %s is refused: %w", image, namespace, err)
	}
	if got := valid.Spec.Ports[0].TargetPort; got != intstr.FromInt32(8080) {
		return "", fmt.Errorf("a DeployObject created in namespace %s has the targetPort %q, not its port's 8080: the mutating webhook "+
			"did not default it (is the namespace one the webhooks' namespaceSelector leaves out?)", namespace, got.String())
	}
	invalid := object()
	invalid.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "Not_A_Secret_Name"}}
	err = c.Create(ctx, invalid, client.DryRunAll)
	const rule = "deployobject.image-pull-secrets.valid"
	switch {
	case err == nil:
		return "", fmt.Errorf("a DeployObject with the pull secret %q is admitted in namespace %s: the validating webhook did not judge it", invalid.Spec.ImagePullSecrets[0].Name, namespace)
	case !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), rule):
		return "", errors.Join(fmt.Errorf("a DeployObject with an impossible pull secret name is refused in namespace %s, but not for the rule %s", namespace, rule), err)
	}
	return fmt.Sprintf("namespace %s: the mutating webhook defaulted a DeployObject's targetPort to 8080; the validating webhook refused one: %v", namespace, err), nil
}
