package apply

import (
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

func TestForeignServicePorts(t *testing.T) {
	desired := corev1ac.Service("app", "ns").WithSpec(corev1ac.ServiceSpec().WithPorts(
		corev1ac.ServicePort().WithName("http").WithPort(80).WithProtocol(corev1.ProtocolTCP),
		corev1ac.ServicePort().WithName("dns").WithPort(53).WithProtocol(corev1.ProtocolUDP),
	))
	tests := []struct {
		name string
		live []corev1.ServicePort
		want []int
	}{
		{name: "exactly the desired ports", live: []corev1.ServicePort{
			{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}, {Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
		}},
		{name: "a port number edited by hand", live: []corev1.ServicePort{
			{Name: "http", Port: 81, Protocol: corev1.ProtocolTCP}, {Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
		}, want: []int{0}},
		{name: "same port, other protocol", live: []corev1.ServicePort{
			{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}, {Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP},
		}, want: []int{1}},
		{name: "foreign ports are listed highest index first", live: []corev1.ServicePort{
			{Name: "a", Port: 1}, {Name: "http", Port: 80}, {Name: "b", Port: 2},
		}, want: []int{2, 0}},
		{name: "no live ports", live: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live := &corev1.Service{Spec: corev1.ServiceSpec{Ports: tt.live}}
			if got := ForeignServicePorts(live, desired); !slices.Equal(got, tt.want) {
				t.Errorf("ForeignServicePorts() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestKeptOrDesiredPorts(t *testing.T) {
	desired := corev1ac.Service("app", "ns").WithSpec(corev1ac.ServiceSpec().WithPorts(
		corev1ac.ServicePort().WithName("http").WithPort(80).WithProtocol(corev1.ProtocolTCP).WithTargetPort(intstr.FromInt32(8080)),
		corev1ac.ServicePort().WithName("metrics").WithPort(9090).WithProtocol(corev1.ProtocolTCP).WithTargetPort(intstr.FromInt32(9090)),
	))
	live := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Name: "http-by-hand", Port: 81, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080), NodePort: 30001},
		{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080), NodePort: 30000},
	}}}
	got, err := keptOrDesiredPorts(live, desired)
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.ServicePort{
		{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080), NodePort: 30000},
		{Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9090)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("keptOrDesiredPorts() =\n%+v\nwant\n%+v", got, want)
	}
}
