//go:build linux

package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CertManagerNamespace is where cert-manager runs, as its Helm chart installs it.
const CertManagerNamespace = "cert-manager"

// certManagerStarted is the line the cert-manager program logs once every controller runs.
const certManagerStarted = "cert-manager controllers started"

// deployCertManager runs cert-manager's controllers and CA injector (test/tools/e2e's
// cert-manager program, in its image) as a pod of the node, under the restricted Pod Security
// Standard, and waits until its log says every controller runs. Its service account is bound to
// cluster-admin, the test's stand-in for the roles of cert-manager's chart.
func (c *Cluster) deployCertManager(ctx context.Context, image string) error {
	labels := map[string]string{"app.kubernetes.io/name": "cert-manager"}
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: CertManagerNamespace, Labels: map[string]string{
			"pod-security.kubernetes.io/enforce": "restricted",
		}}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: CertManagerNamespace, Name: "cert-manager"}},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-cert-manager"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: CertManagerNamespace, Name: "cert-manager"}},
		},
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: CertManagerNamespace, Name: "cert-manager", Labels: labels},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						ServiceAccountName: "cert-manager",
						SecurityContext: &corev1.PodSecurityContext{
							RunAsNonRoot:   ptr.To(true),
							SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
						},
						Containers: []corev1.Container{{
							Name:            "cert-manager",
							Image:           image,
							ImagePullPolicy: corev1.PullNever,
							SecurityContext: &corev1.SecurityContext{
								AllowPrivilegeEscalation: ptr.To(false),
								ReadOnlyRootFilesystem:   ptr.To(true),
								Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							},
						}},
					},
				},
			},
		},
	}
	for _, obj := range objects {
		if err := c.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("deploying cert-manager: %w", err)
		}
	}
	clientset, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	return c.waitFor(ctx, "cert-manager's controllers to start in their pod", c.process("kubelet"), func(ctx context.Context) error {
		pods := &corev1.PodList{}
		if err := c.Client.List(ctx, pods, client.InNamespace(CertManagerNamespace), client.MatchingLabels(labels)); err != nil {
			return err
		}
		if len(pods.Items) != 1 {
			return fmt.Errorf("%d cert-manager pods", len(pods.Items))
		}
		pod := pods.Items[0]
		if pod.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("cert-manager's pod is %s: %+v", pod.Status.Phase, pod.Status.ContainerStatuses)
		}
		// Read through the API server, which asks kubelet, as kubectl logs does.
		log, err := clientset.CoreV1().Pods(CertManagerNamespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			return err
		}
		if !strings.Contains(string(log), certManagerStarted) {
			return errors.New("cert-manager has not logged " + certManagerStarted)
		}
		return nil
	})
}
