// Package gitops computes what GitOps tools make of an object of the operator's kinds, from the
// object as the API server serves it: kstatus' verdict (sigs.k8s.io/cli-utils), as Flux's health
// checks, kpt and Config Sync compute it, and Argo CD's, by running config/argocd/health.lua as
// Argo CD runs a health check.
package gitops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/seedlabs/webhook-operator/test/testenv"
)

// HealthScript is the path of the Argo CD health check, from the module root.
const HealthScript = "config/argocd/health.lua"

// Argo CD's health statuses a health check may return.
const (
	Healthy     = "Healthy"
	Progressing = "Progressing"
	Degraded    = "Degraded"
	Suspended   = "Suspended"
	Missing     = "Missing"
	Unknown     = "Unknown"
)

// Verdict is what kstatus and Argo CD make of one object.
type Verdict struct {
	// KStatus is kstatus' status: InProgress, Current, Failed or Terminating.
	KStatus status.Status
	// KStatusMessage is kstatus' message.
	KStatusMessage string
	// ArgoCD is the health status the Argo CD health check returns.
	ArgoCD string
	// ArgoCDMessage is the health check's message.
	ArgoCDMessage string
}

// String describes the verdict for a failure message.
func (v Verdict) String() string {
	return fmt.Sprintf("kstatus %s (%s), Argo CD %s (%s)", v.KStatus, v.KStatusMessage, v.ArgoCD, v.ArgoCDMessage)
}

// Agree reports whether kstatus and Argo CD say the same: Current is Healthy, InProgress is
// Progressing, Failed is Degraded.
func (v Verdict) Agree() bool {
	return map[status.Status]string{
		status.CurrentStatus:    Healthy,
		status.InProgressStatus: Progressing,
		status.FailedStatus:     Degraded,
	}[v.KStatus] == v.ArgoCD
}

// Judge returns the verdict of kstatus and of the Argo CD health check on obj.
func Judge(obj *unstructured.Unstructured) (Verdict, error) {
	res, err := status.Compute(obj)
	if err != nil {
		return Verdict{}, fmt.Errorf("kstatus: %w", err)
	}
	health, message, err := ArgoCDHealth(obj)
	if err != nil {
		return Verdict{}, err
	}
	return Verdict{KStatus: res.Status, KStatusMessage: res.Message, ArgoCD: health, ArgoCDMessage: message}, nil
}

// ArgoCDHealth runs the health check on obj as Argo CD does (util/lua in argoproj/argo-cd): the
// object as a global table obj, the base, package and table libraries only, one second at most,
// and a table of status and message returned.
func ArgoCDHealth(obj *unstructured.Unstructured) (health, message string, err error) {
	root, err := testenv.ModuleRoot()
	if err != nil {
		return "", "", err
	}
	script, err := os.ReadFile(filepath.Join(root, HealthScript))
	if err != nil {
		return "", "", err
	}
	return RunHealthScript(string(script), obj)
}

// RunHealthScript runs a health check script on obj as ArgoCDHealth does.
func RunHealthScript(script string, obj *unstructured.Unstructured) (health, message string, err error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return "", "", fmt.Errorf("opening Lua's %s library: %w", lib.name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", luaValue(l, obj.Object))
	if err := l.DoString(script); err != nil {
		return "", "", fmt.Errorf("the health check failed: %w", err)
	}
	returned, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return "", "", fmt.Errorf("the health check returned %s, want a table", l.Get(-1).Type())
	}
	health, message = lua.LVAsString(returned.RawGetString("status")), lua.LVAsString(returned.RawGetString("message"))
	switch health {
	case Healthy, Progressing, Degraded, Suspended, Missing, Unknown:
		return health, message, nil
	}
	return "", "", fmt.Errorf("the health check returned status %q, which Argo CD does not know", health)
}

// luaValue converts a value of an unstructured object to Lua, as Argo CD's decodeValue does.
func luaValue(l *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case []any:
		table := l.CreateTable(len(v), 0)
		for _, item := range v {
			table.Append(luaValue(l, item))
		}
		return table
	case map[string]any:
		table := l.CreateTable(0, len(v))
		for key, item := range v {
			table.RawSetH(lua.LString(key), luaValue(l, item))
		}
		return table
	}
	return lua.LNil
}
