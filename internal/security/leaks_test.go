package security_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/label"
)

// planted is a credential the tests hand to cube; it must never come back
// in an error, a rendering or a description.
const planted = "hf_PlantedCredential0123456789abcdefXYZ"

// assertNoCredential fails when s holds the credential, in clear or in
// base64 (as a Secret's data would carry it).
func assertNoCredential(t *testing.T, s, credential, what string) {
	t.Helper()
	assert.NotContains(t, s, credential, "%s repeats the credential", what)
	assert.NotContains(t, s, base64.StdEncoding.EncodeToString([]byte(credential)), "%s repeats the credential in base64", what)
}

// TestBuildersRefuseALiteralCredentialWithoutRepeatingIt writes a token in
// clear in the env of every builder: Objects and Render refuse it, name
// the variable, and never repeat the value.
func TestBuildersRefuseALiteralCredentialWithoutRepeatingIt(t *testing.T) {
	for _, bc := range builderCases() {
		s := setting{profile: hardware.CPU, literal: planted}
		if bc.name == "serve-mindie" {
			s.profile = hardware.Ascend910B3
		}
		_, err := bc.make(s).Objects()
		require.Error(t, err, "%s takes a credential in clear", bc.name)
		assert.Contains(t, err.Error(), "HF_TOKEN", bc.name)
		assert.Contains(t, err.Error(), "EnvFromSecret", "%s says how to do it instead", bc.name)
		assertNoCredential(t, err.Error(), planted, bc.name+"'s error")

		var out bytes.Buffer
		err = cube.Render(&out, bc.make(s))
		require.Error(t, err, bc.name)
		assertNoCredential(t, err.Error()+out.String(), planted, bc.name+"'s rendering")
	}
}

// TestClientsNeverPrintTheirCredentials formats the clients that hold an
// API key, a token or a password every way a program might log them.
func TestClientsNeverPrintTheirCredentials(t *testing.T) {
	sc, err := inference.NewClient("http://qwen-chat:8000/v1", inference.APIKey(planted), inference.ServedModel("qwen"))
	require.NoError(t, err)
	lc, err := label.NewClient("http://labels:8080", label.Token(planted))
	require.NoError(t, err)
	backend, err := label.NewBackend(sc, label.BasicAuth("labeler", planted))
	require.NoError(t, err)
	for name, v := range map[string]any{"inference.Client": sc, "label.Client": lc, "label.Backend": backend} {
		for _, verb := range []string{"%v", "%+v", "%s", "%#v"} {
			assertNoCredential(t, fmt.Sprintf(verb, v), planted, name+" printed with "+verb)
		}
		assert.False(t, strings.Contains(fmt.Sprint(v), "0x"), "%s prints as %q: say what it is, not where", name, fmt.Sprint(v))
	}
}
