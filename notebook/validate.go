package notebook

import (
	"net/url"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/internal/podspec"
)

func (n *Notebook) validateLauncher() field.ErrorList {
	p := field.NewPath("launcher")
	if !n.launcherSet {
		return nil
	}
	if n.ide != IDEJupyter {
		return field.ErrorList{field.Forbidden(p, "only Jupyter notebooks take a launcher")}
	}
	var errs field.ErrorList
	switch n.launcher {
	case LaunchDockerStacks, LaunchJupyterServer:
	case LaunchKubeflow:
		if n.port != 0 && n.port != kubeflowPort {
			errs = append(errs, field.Invalid(field.NewPath("serverPort"), n.port, "Kubeflow's images listen on 8888, which their s6 service fixes"))
		}
		if n.homeDir != "" && n.homeDir != kubeflowHome {
			errs = append(errs, field.Invalid(field.NewPath("homeDir"), n.homeDir, "Kubeflow's images serve their $HOME, /home/jovyan, which their s6 service fixes"))
		}
		if cmd, args := podspec.Of(&n.Handle).CommandLine(); cmd == nil && len(args) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("args"), args, "Kubeflow's images take no arguments: their s6 service starts Jupyter"))
		}
	default:
		errs = append(errs, field.NotSupported(p, n.launcher, []Launcher{LaunchDockerStacks, LaunchKubeflow, LaunchJupyterServer}))
	}
	return errs
}

func (n *Notebook) validateIdentity() field.ErrorList {
	// The UI Service carries the notebook's name.
	errs := podspec.Of(&n.Handle).ValidateServiceMeta(MaxNameLength)
	userPath := field.NewPath("user")
	switch {
	case n.user == "":
		errs = append(errs, field.Required(userPath, "the notebook's owner is required"))
	default:
		for _, msg := range validation.IsValidLabelValue(n.user) {
			errs = append(errs, field.Invalid(userPath, n.user, msg))
		}
	}
	return errs
}

func (n *Notebook) resolveBaseURL(srv server) (string, field.ErrorList) {
	p := field.NewPath("baseURL")
	if !srv.takesBaseURL {
		if n.baseURLSet {
			return "", field.ErrorList{field.Forbidden(p, "only Jupyter serves under a base URL; put "+string(n.ide)+" behind a proxy that strips the prefix")}
		}
		return "/", nil
	}
	if !n.baseURLSet {
		if podspec.Of(&n.Handle).NamespaceName() == "" {
			return "", field.ErrorList{field.Required(field.NewPath("metadata", "namespace"), "the default base URL /notebook/<namespace>/<name>/ needs a namespace: set Namespace or BaseURL")}
		}
		return srv.defaultBaseURL(podspec.Of(&n.Handle).NamespaceName(), podspec.Of(&n.Handle).Name()), nil
	}
	return n.baseURL, validateBaseURL(n.baseURL, p)
}

// validateBaseURL accepts an absolute, clean URL path ending in a slash,
// made of unreserved and sub-delimiter characters only: it is passed on the
// server's command line and matched by proxies verbatim.
func validateBaseURL(s string, p *field.Path) field.ErrorList {
	const msg = "must be a clean absolute path ending in '/', e.g. /notebook/team/alice/"
	if !strings.HasPrefix(s, "/") || !strings.HasSuffix(s, "/") {
		return field.ErrorList{field.Invalid(p, s, msg)}
	}
	if s != "/" && path.Clean(s)+"/" != s {
		return field.ErrorList{field.Invalid(p, s, msg)}
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "" || u.Host != "" || u.RawQuery != "" || u.Fragment != "" || u.Path != s {
		return field.ErrorList{field.Invalid(p, s, "must be a URL path without scheme, host, query, fragment or escapes")}
	}
	for _, r := range s {
		if !isPathRune(r) {
			return field.ErrorList{field.Invalid(p, s, "may contain only letters, digits and -._~/ characters")}
		}
	}
	return nil
}

func isPathRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("-._~/", r)
}

func (n *Notebook) validateSecret() field.ErrorList {
	p := field.NewPath("credential")
	if !n.secretSet {
		return field.ErrorList{field.Required(p, "name the Secret and key holding the notebook's "+credentialWord(n.ide)+" with Credential")}
	}
	var errs field.ErrorList
	if n.secretName == "" {
		errs = append(errs, field.Required(p.Child("name"), "a Secret name is required"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(n.secretName) {
			errs = append(errs, field.Invalid(p.Child("name"), n.secretName, msg))
		}
	}
	if n.secretKey == "" {
		errs = append(errs, field.Required(p.Child("key"), "a Secret key is required"))
	} else {
		for _, msg := range validation.IsConfigMapKey(n.secretKey) {
			errs = append(errs, field.Invalid(p.Child("key"), n.secretKey, msg))
		}
	}
	return errs
}

func credentialWord(ide IDE) string {
	if ide == IDEJupyter {
		return "token"
	}
	return "password"
}

func (n *Notebook) validateAllow() field.ErrorList {
	p := field.NewPath("networkPolicy", "from")
	if len(n.allow) == 0 {
		return field.ErrorList{field.Required(p, "name who may reach the notebook with AllowNamespace or AllowPods (an ingress controller, a gateway, the culler)")}
	}
	var errs field.ErrorList
	for i, peer := range n.allow {
		if ns := peer.NamespaceSelector; ns != nil {
			nsPath := p.Index(i).Child("namespaceSelector")
			if peer.PodSelector == nil && len(ns.MatchLabels) == 0 {
				errs = append(errs, field.Invalid(nsPath, "{}", "must not be empty: it would admit every namespace"))
			}
			errs = append(errs, podspec.ValidateLabels(ns.MatchLabels, nsPath.Child("matchLabels"))...)
		}
		if ps := peer.PodSelector; ps != nil {
			errs = append(errs, podspec.ValidateLabels(ps.MatchLabels, p.Index(i).Child("podSelector", "matchLabels"))...)
		}
	}
	return errs
}
