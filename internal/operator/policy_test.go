package operator

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// lateCache is a cache that sees the namespace only once it has been asked misses times: one
// created a moment before the object in it.
type lateCache struct {
	client.Reader
	misses, asked int
}

func (c *lateCache) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	c.asked++
	if c.asked <= c.misses {
		return apierrors.NewNotFound(corev1.Resource("namespaces"), key.Name)
	}
	obj.SetLabels(map[string]string{"team": "a"})
	return nil
}

// TestCachedNamespacesWaitForOneJustCreated: the webhooks' namespaces wait a moment for the cache
// to see a namespace created just before the object, for its labels and for its refusal Event
// alike, and give up on one it never sees at the request's deadline.
func TestCachedNamespacesWaitForOneJustCreated(t *testing.T) {
	late := &lateCache{misses: 3}
	if !(cachedNamespaces{cache: late}).HasNamespace(t.Context(), "new") {
		t.Errorf("HasNamespace() = false for a namespace the cache sees after %d misses", late.misses)
	}
	late = &lateCache{misses: 3}
	labels, err := cachedNamespaces{cache: late}.NamespaceLabels(t.Context(), "new")
	if err != nil || labels["team"] != "a" {
		t.Errorf("NamespaceLabels() = %v, %v; want team=a", labels, err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	never := &lateCache{misses: 1 << 30}
	if (cachedNamespaces{cache: never}).HasNamespace(ctx, "invented") {
		t.Error("HasNamespace() = true for a namespace the cache never sees")
	}
	if _, err := (cachedNamespaces{cache: never}).NamespaceLabels(ctx, "invented"); err == nil {
		t.Error("NamespaceLabels() = nil error for a namespace the cache never sees")
	}
	if never.asked < 2 {
		t.Errorf("the cache was read %d times: nothing waited", never.asked)
	}
}
