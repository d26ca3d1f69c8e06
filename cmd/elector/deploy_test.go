package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// k8sObject is the part of a Kubernetes object these tests read.
type k8sObject struct {
	Kind     string
	Metadata struct{ Name string }
	Data     map[string]string // ConfigMap
	Spec     struct {
		// Service
		ClusterIP                string `json:"clusterIP"`
		PublishNotReadyAddresses bool   `json:"publishNotReadyAddresses"`
		Ports                    []struct {
			Name       string
			Port       int
			TargetPort any `json:"targetPort"`
		}
		// Service (a map) and workloads and PDBs (matchLabels)
		Selector any
		// StatefulSet, Deployment
		Replicas            int
		ServiceName         string `json:"serviceName"`
		PodManagementPolicy string `json:"podManagementPolicy"`
		Template            struct {
			Metadata struct{ Labels map[string]string }
			Spec     struct {
				Containers []k8sContainer
				Volumes    []struct {
					Name      string
					ConfigMap *struct{ Name string } `json:"configMap"`
					Secret    *struct {
						SecretName string `json:"secretName"`
					}
				}
			}
		}
	}
}

type k8sContainer struct {
	Name  string
	Image string
	Args  []string
	Ports []struct {
		Name          string
		ContainerPort int `json:"containerPort"`
	}
	Env []struct {
		Name  string
		Value string
	}
	LivenessProbe  *k8sProbe `json:"livenessProbe"`
	ReadinessProbe *k8sProbe `json:"readinessProbe"`
	VolumeMounts   []struct {
		Name      string
		MountPath string `json:"mountPath"`
	} `json:"volumeMounts"`
}

type k8sProbe struct {
	HTTPGet *struct {
		Path string
		Port any
	} `json:"httpGet"`
}

// matchLabels returns the labels a selector selects on: a Service's map,
// or a workload's or PDB's matchLabels.
func (o k8sObject) matchLabels() map[string]string {
	m, _ := o.Spec.Selector.(map[string]any)
	if ml, ok := m["matchLabels"].(map[string]any); ok {
		m = ml
	}
	out := map[string]string{}
	for k, v := range m {
		out[k], _ = v.(string)
	}
	return out
}

// readManifests returns the objects of a multi-document YAML file.
func readManifests(t *testing.T, path string) []k8sObject {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var objs []k8sObject
	for doc := range strings.SplitSeq(string(b), "\n---\n") {
		var o k8sObject
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if o.Kind != "" {
			objs = append(objs, o)
		}
	}
	return objs
}

// selects reports whether a selector's labels all appear in labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// TestKubernetesManifestsHangTogether checks what a schema cannot in
// deploy/kubernetes: each workload's selector matches its pods, every
// Service and PodDisruptionBudget selects a workload and names ports its
// containers have, probes use those ports, the embedded cluster starts its
// pods in parallel (a member is ready only once all have started) behind a
// headless Service that publishes unready pods, and every configuration a
// gateway pod reads loads with serve's own flags and loader, each member
// routing to the other two and never to itself.
func TestKubernetesManifestsHangTogether(t *testing.T) {
	files, err := filepath.Glob("../../deploy/kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/kubernetes (%v)", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			objs := readManifests(t, file)
			byKind := map[string][]k8sObject{}
			for _, o := range objs {
				byKind[o.Kind] = append(byKind[o.Kind], o)
			}
			workloads := append(slices.Clone(byKind["StatefulSet"]), byKind["Deployment"]...)
			if len(workloads) == 0 {
				t.Fatal("no workload")
			}
			ports := map[string]bool{}
			for _, w := range workloads {
				if !selects(w.matchLabels(), w.Spec.Template.Metadata.Labels) {
					t.Errorf("%s %s: selector %v does not match its pods' labels %v", w.Kind, w.Metadata.Name, w.matchLabels(), w.Spec.Template.Metadata.Labels)
				}
				for _, c := range w.Spec.Template.Spec.Containers {
					for _, p := range c.Ports {
						ports[p.Name] = true
					}
				}
				for _, c := range w.Spec.Template.Spec.Containers {
					for _, p := range []*k8sProbe{c.LivenessProbe, c.ReadinessProbe} {
						if p == nil || p.HTTPGet == nil {
							continue
						}
						if name, ok := p.HTTPGet.Port.(string); !ok || !ports[name] {
							t.Errorf("%s: probe of %s uses port %v, which no container names", w.Metadata.Name, c.Name, p.HTTPGet.Port)
						}
					}
				}
			}
			for _, o := range append(slices.Clone(byKind["Service"]), byKind["PodDisruptionBudget"]...) {
				n := 0
				for _, w := range workloads {
					if selects(o.matchLabels(), w.Spec.Template.Metadata.Labels) {
						n++
					}
				}
				if n == 0 {
					t.Errorf("%s %s selects no workload of the file", o.Kind, o.Metadata.Name)
				}
				for _, p := range o.Spec.Ports {
					if name, ok := p.TargetPort.(string); ok && !ports[name] {
						t.Errorf("Service %s: targetPort %q is no container port", o.Metadata.Name, name)
					}
				}
			}
			for _, sts := range byKind["StatefulSet"] {
				if sts.Spec.PodManagementPolicy != "Parallel" {
					t.Errorf("StatefulSet %s: podManagementPolicy %q; a member is ready only with its peers, so OrderedReady never starts the second", sts.Metadata.Name, sts.Spec.PodManagementPolicy)
				}
				i := slices.IndexFunc(byKind["Service"], func(s k8sObject) bool { return s.Metadata.Name == sts.Spec.ServiceName })
				if i < 0 || byKind["Service"][i].Spec.ClusterIP != "None" || !byKind["Service"][i].Spec.PublishNotReadyAddresses {
					t.Errorf("StatefulSet %s: serviceName %q is not a headless Service publishing unready pods", sts.Metadata.Name, sts.Spec.ServiceName)
				}
			}
			for _, w := range workloads {
				checkGatewayConfigs(t, w, byKind["ConfigMap"])
				checkSidecarArgs(t, w)
			}
		})
	}
}

// checkGatewayConfigs loads, with serve's flags and loader, the
// configuration each pod of w's `elector serve` container reads from a
// ConfigMap, and checks that the members of an embedded cluster route to
// each other and not to themselves.
func checkGatewayConfigs(t *testing.T, w k8sObject, configMaps []k8sObject) {
	t.Helper()
	for _, c := range w.Spec.Template.Spec.Containers {
		if len(c.Args) == 0 || c.Args[0] != "serve" {
			continue
		}
		// A gateway is alive while it serves HTTP (also while it waits for
		// its peers) and ready once its backend can serve.
		if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" ||
			c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
			t.Errorf("%s: the gateway container wants a liveness probe on /healthz and a readiness probe on /readyz", w.Metadata.Name)
		}
		// Where each ConfigMap is mounted, and its files there; where
		// secrets are mounted.
		files := map[string]string{}
		var secrets []string
		for _, m := range c.VolumeMounts {
			for _, v := range w.Spec.Template.Spec.Volumes {
				if v.Name == m.Name && v.Secret != nil {
					secrets = append(secrets, m.MountPath+"/")
				}
				if v.Name != m.Name || v.ConfigMap == nil {
					continue
				}
				i := slices.IndexFunc(configMaps, func(cm k8sObject) bool { return cm.Metadata.Name == v.ConfigMap.Name })
				if i < 0 {
					t.Fatalf("%s mounts ConfigMap %s, which the file does not hold", w.Metadata.Name, v.ConfigMap.Name)
				}
				for name, content := range configMaps[i].Data {
					files[m.MountPath+"/"+name] = content
				}
			}
		}
		pods := []string{w.Metadata.Name}
		if w.Kind == "StatefulSet" {
			pods = nil
			for i := range w.Spec.Replicas {
				pods = append(pods, fmt.Sprintf("%s-%d", w.Metadata.Name, i))
			}
		}
		names := map[string]bool{}
		for _, pod := range pods {
			args := slices.Clone(c.Args[1:])
			for i := range args {
				args[i] = strings.ReplaceAll(args[i], "$(POD_NAME)", pod)
			}
			fs := newServeFlags(os.Stderr)
			if err := fs.Parse(args); err != nil {
				t.Fatalf("%s: serve %q: %v", pod, args, err)
			}
			path, _ := fs.GetString("config")
			content, ok := files[path]
			if !ok {
				t.Fatalf("%s: --config %s is none of the mounted files %v", pod, path, slices.Sorted(maps.Keys(files)))
			}
			isolate(t)
			// Files of mounted secrets (API tokens) stand in a temporary
			// directory, each holding a token.
			for _, dir := range secrets {
				tmp := t.TempDir() + "/"
				content = strings.ReplaceAll(content, dir, tmp)
				for _, m := range regexp.MustCompile(`(?m)^\s+file:\s*(\S+)`).FindAllStringSubmatch(content, -1) {
					if strings.HasPrefix(m[1], tmp) {
						if err := os.WriteFile(m[1], []byte("stand-in-token-0123456789"), 0o600); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			local := filepath.Join(t.TempDir(), "elector.yaml")
			if err := os.WriteFile(local, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := fs.Set("config", local); err != nil {
				t.Fatal(err)
			}
			l, err := loadConfig(fs)
			if err != nil {
				t.Fatalf("%s: %s does not load: %v", pod, path, err)
			}
			e := l.Config.Backend.Embedded
			if w.Kind != "StatefulSet" || len(e.Routes) == 0 {
				continue
			}
			if names[e.ServerName] {
				t.Errorf("%s: server_name %s is another member's too", pod, e.ServerName)
			}
			names[e.ServerName] = true
			var want []string
			_, port, _ := strings.Cut(e.ClusterListen, ":")
			for _, other := range pods {
				if other != pod {
					want = append(want, other+"."+w.Spec.ServiceName+":"+port)
				}
			}
			if got := slices.Sorted(slices.Values(e.Routes)); !slices.Equal(got, want) {
				t.Errorf("%s: routes %v; want the other members %v", pod, got, want)
			}
		}
	}
}

// checkSidecarArgs parses the arguments of each `elector run` and `elector
// proxy` container of w with the command's own flags and checks them as
// the command would, with the container's environment (and a pod's name
// and address for the variables Kubernetes fills in).
func checkSidecarArgs(t *testing.T, w k8sObject) {
	t.Helper()
	for _, c := range w.Spec.Template.Spec.Containers {
		if len(c.Args) == 0 || (c.Args[0] != "run" && c.Args[0] != "proxy") {
			continue
		}
		vars := map[string]string{"POD_NAME": w.Metadata.Name + "-0", "POD_IP": "10.0.0.7"}
		gateway := ""
		for _, e := range c.Env {
			if e.Name == envGateway {
				gateway = e.Value
			}
		}
		args := slices.Clone(c.Args[1:])
		for i := range args {
			for k, v := range vars {
				args[i] = strings.ReplaceAll(args[i], "$("+k+")", v)
			}
		}
		var err error
		if c.Args[0] == "run" {
			cfg := &sidecarConfig{}
			fs := newRunFlags(io.Discard, cfg)
			if err = fs.Parse(args); err == nil {
				cfg.gateway = gatewayURL(gateway)
				err = cfg.check()
			}
		} else {
			f := &proxyFlags{}
			fs := newProxyFlags(io.Discard, f)
			if err = fs.Parse(args); err == nil {
				f.gateway = gatewayURL(gateway)
				err = f.check()
			}
		}
		if err != nil {
			t.Errorf("%s: elector %s %q: %v", w.Metadata.Name, c.Args[0], args, err)
		}
	}
}

// composeFile is the part of a Compose file these tests read.
type composeFile struct {
	Services map[string]struct {
		Image       string
		Build       any
		Command     []string
		Environment map[string]string
		Ports       []string
	}
}

// TestComposeFilesConfigureServe loads the settings each elector service of
// deploy/compose gives in its environment as serve would: every variable
// names a setting, the values load, an embedded cluster routes to members
// the file defines, and no two services publish one host port.
// (scripts/check-deploy.sh validates the files themselves with compose-go.)
func TestComposeFilesConfigureServe(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "deploy", "compose", "*.yaml"))
	if err != nil || len(paths) < 2 {
		t.Fatalf("deploy/compose holds %v (%v); want the cluster and etcd files", paths, err)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			var f composeFile
			if err := yaml.Unmarshal(b, &f); err != nil {
				t.Fatal(err)
			}
			ports := map[string]string{}
			electors := 0
			for _, name := range slices.Sorted(maps.Keys(f.Services)) {
				svc := f.Services[name]
				for _, port := range svc.Ports {
					if other, ok := ports[port]; ok {
						t.Errorf("%s and %s both publish %s", other, name, port)
					}
					ports[port] = name
				}
				if svc.Build == nil {
					continue // not elector (etcd)
				}
				electors++
				t.Run(name, func(t *testing.T) {
					isolate(t)
					// The image's own environment (Dockerfile), then the service's.
					t.Setenv("ELECTOR_LISTEN", "0.0.0.0:8080")
					t.Setenv("ELECTOR_EMBEDDED_DATA_DIR", t.TempDir())
					for k, v := range svc.Environment {
						t.Setenv(k, v)
					}
					args := svc.Command
					if len(args) == 0 {
						args = []string{"serve"} // the image's CMD
					}
					if args[0] != "serve" {
						t.Fatalf("command %q, want serve", args)
					}
					l, err := load(t, args[1:]...)
					if err != nil {
						t.Fatal(err)
					}
					if len(l.UnknownEnv) > 0 {
						t.Errorf("variables that name no setting: %v", l.UnknownEnv)
					}
					for _, route := range l.Config.Backend.Embedded.Routes {
						host, _, _ := strings.Cut(route, ":")
						if _, ok := f.Services[host]; !ok || host == name {
							t.Errorf("route %s names no other service of the file", route)
						}
					}
					if adv := l.Config.Backend.Embedded.ClusterAdvertise; adv != "" && !strings.HasPrefix(adv, name+":") {
						t.Errorf("advertises %s, not its own service name %s", adv, name)
					}
				})
			}
			if electors < 2 {
				t.Errorf("%d elector services; want several replicas", electors)
			}
		})
	}
}
