package cube_test

import (
	"fmt"
	"os"

	"github.com/cubestudio/cube"
)

// A team's namespace with quota for CPUs, memory and two kinds of
// accelerators, its Volcano queue, members and network isolation.
func ExampleTenant() {
	tenant := cube.Tenant("team-a").
		Editors("alice").
		ViewerGroups("auditors").
		CPU("128").Memory("1Ti").Pods(100).
		Accelerators("nvidia.com/gpu", 16).
		Accelerators("huawei.com/Ascend910", 8).
		QueueWeight(2)
	if err := cube.Render(os.Stdout, tenant); err != nil {
		fmt.Println(err)
	}
	// Output:
	// apiVersion: v1
	// kind: Namespace
	// metadata:
	//   labels:
	//     app.kubernetes.io/managed-by: cube
	//     app.kubernetes.io/name: team-a
	//     app.kubernetes.io/part-of: team-a
	//     cube.dev/kind: tenant
	//     cube.dev/release: team-a
	//     pod-security.kubernetes.io/audit: baseline
	//     pod-security.kubernetes.io/enforce: baseline
	//     pod-security.kubernetes.io/enforce-version: latest
	//     pod-security.kubernetes.io/warn: baseline
	//   name: team-a
	// spec: {}
	// ---
	// apiVersion: networking.k8s.io/v1
	// kind: NetworkPolicy
	// metadata:
	//   labels:
	//     app.kubernetes.io/managed-by: cube
	//     app.kubernetes.io/name: team-a
	//     app.kubernetes.io/part-of: team-a
	//     cube.dev/kind: tenant
	//     cube.dev/release: team-a
	//   name: team-a-isolation
	//   namespace: team-a
	// spec:
	//   ingress:
	//   - from:
	//     - podSelector: {}
	//   podSelector: {}
	//   policyTypes:
	//   - Ingress
	// ---
	// apiVersion: v1
	// kind: ResourceQuota
	// metadata:
	//   labels:
	//     app.kubernetes.io/managed-by: cube
	//     app.kubernetes.io/name: team-a
	//     app.kubernetes.io/part-of: team-a
	//     cube.dev/kind: tenant
	//     cube.dev/release: team-a
	//   name: team-a
	//   namespace: team-a
	// spec:
	//   hard:
	//     limits.cpu: "128"
	//     limits.memory: 1Ti
	//     pods: "100"
	//     requests.cpu: "128"
	//     requests.huawei.com/Ascend910: "8"
	//     requests.memory: 1Ti
	//     requests.nvidia.com/gpu: "16"
	// ---
	// apiVersion: v1
	// kind: LimitRange
	// metadata:
	//   labels:
	//     app.kubernetes.io/managed-by: cube
	//     app.kubernetes.io/name: team-a
	//     app.kubernetes.io/part-of: team-a
	//     cube.dev/kind: tenant
	//     cube.dev/release: team-a
	//   name: team-a
	//   namespace: team-a
	// spec:
	//   limits:
	//   - default:
	//       cpu: "1"
	//       memory: 1Gi
	//     defaultRequest:
	//       cpu: 100m
	//       memory: 128Mi
	//     type: Container
	// ---
	// apiVersion: rbac.authorization.k8s.io/v1
	// kind: RoleBinding
	// metadata:
	//   labels:
	//     app.kubernetes.io/managed-by: cube
	//     app.kubernetes.io/name: team-a
	//     app.kubernetes.io/part-of: team-a
	//     cube.dev/kind: tenant
	//     cube.dev/release: team-a
	//   name: team-a-edit
	//   namespace: team-a
	// roleRef:
	//   apiGroup: rbac.authorization.k8s.io
	//   kind: ClusterRole
	//   name: edit
	// subjects:
	// - apiGroup: rbac.authorization.k8s.io
	//   kind: User
	//   name: alice
	// ---
	// apiVersion: rbac.authorization.k8s.io/v1
	// kind: RoleBinding
	// metadata:
	//   labels:
	//     app.kubernetes.io/managed-by: cube
	//     app.kubernetes.io/name: team-a
	//     app.kubernetes.io/part-of: team-a
	//     cube.dev/kind: tenant
	//     cube.dev/release: team-a
	//   name: team-a-view
	//   namespace: team-a
	// roleRef:
	//   apiGroup: rbac.authorization.k8s.io
	//   kind: ClusterRole
	//   name: view
	// subjects:
	// - apiGroup: rbac.authorization.k8s.io
	//   kind: Group
	//   name: auditors
	// ---
	// apiVersion: scheduling.volcano.sh/v1beta1
	// kind: Queue
	// metadata:
	//   labels:
	//     app.kubernetes.io/managed-by: cube
	//     app.kubernetes.io/name: team-a
	//     app.kubernetes.io/part-of: team-a
	//     cube.dev/kind: tenant
	//     cube.dev/release: team-a
	//   name: team-a
	// spec:
	//   capability:
	//     cpu: "128"
	//     huawei.com/Ascend910: "8"
	//     memory: 1Ti
	//     nvidia.com/gpu: "16"
	//   guarantee: {}
	//   weight: 2
}
