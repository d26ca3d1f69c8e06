// Command k8s-strict decodes Kubernetes manifests into the API's own Go
// types, refusing unknown fields and values of the wrong type, as the API
// server's strict field validation does: a misspelt key (readinesProbe),
// which a schema without additionalProperties lets through, fails here.
//
//	go run . ../../kubernetes/*.yaml
//
// It knows the kinds deploy/kubernetes uses; any other kind fails, so that
// a new one is added here rather than skipped. Before the files it decodes
// a known-bad document, so that a decoder that accepts everything fails
// instead of passing silently. Exit status 1 on any problem.
package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// object returns an empty object of the apiVersion and kind, or nil.
func object(apiVersion, kind string) any {
	switch apiVersion + " " + kind {
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}
	case "v1 Secret":
		return &corev1.Secret{}
	case "v1 Service":
		return &corev1.Service{}
	case "v1 ServiceAccount":
		return &corev1.ServiceAccount{}
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}
	case "apps/v1 StatefulSet":
		return &appsv1.StatefulSet{}
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	}
	return nil
}

// check decodes one document strictly.
func check(doc []byte) (string, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return "", err
	}
	what := head.Kind + "/" + head.Metadata.Name
	obj := object(head.APIVersion, head.Kind)
	if obj == nil {
		return what, fmt.Errorf("unknown apiVersion %q and kind %q: add it to object()", head.APIVersion, head.Kind)
	}
	return what, yaml.UnmarshalStrict(doc, obj)
}

func main() {
	canary := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: canary}\nspec:\n  template:\n    spec:\n      containers: [{name: c, image: i, readinesProbe: {}}]\n"
	if _, err := check([]byte(canary)); err == nil {
		fmt.Fprintln(os.Stderr, "the strict decoder accepted a misspelt readinessProbe")
		os.Exit(1)
	}
	passed, failed := 0, 0
	for _, file := range os.Args[1:] {
		b, err := os.ReadFile(file)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			failed++
			continue
		}
		for doc := range strings.SplitSeq(string(b), "\n---\n") {
			if len(bytes.TrimSpace(stripComments([]byte(doc)))) == 0 {
				continue
			}
			what, err := check([]byte(doc))
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: %s: %v\n", file, what, err)
				failed++
				continue
			}
			fmt.Printf("ok %s: %s\n", file, what)
			passed++
		}
	}
	if passed+failed == 0 {
		fmt.Fprintln(os.Stderr, "no manifests given")
		os.Exit(1)
	}
	fmt.Printf("%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}

// stripComments drops the comment lines of a YAML document.
func stripComments(doc []byte) []byte {
	var out []byte
	for line := range bytes.Lines(doc) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line...)
		}
	}
	return out
}
