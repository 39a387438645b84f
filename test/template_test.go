package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/emulator"
	"github.com/baton-run/baton/internal/operator"
	"github.com/baton-run/baton/internal/provision"
	"github.com/baton-run/baton/internal/tick"
)

// scriptPath is the LocalStack ready hook, relative to this package.
const scriptPath = "../localstack/init/ready.d/provision.sh"

// pseudoParameters are the names CloudFormation defines in every stack.
func pseudoParameters() []string {
	return []string{
		"AWS::AccountId", "AWS::NotificationARNs", "AWS::NoValue", "AWS::Partition",
		"AWS::Region", "AWS::StackId", "AWS::StackName", "AWS::URLSuffix",
	}
}

func tree(t *testing.T) map[string]any {
	t.Helper()
	tr, err := provision.Decode(baton.Template())
	if err != nil {
		t.Fatalf("decode template: %v", err)
	}
	return tr
}

// at walks a decoded template along keys; nil when a step is missing.
func at(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func resourcesOfType(tr map[string]any, typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	res, _ := tr["Resources"].(map[string]any)
	for id, r := range res {
		if m, ok := r.(map[string]any); ok && m["Type"] == typ {
			out[id] = m
		}
	}
	return out
}

func TestTemplateParses(t *testing.T) {
	t.Parallel()
	tmpl, err := provision.Parse(baton.Template())
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if tmpl.Transform == nil || tmpl.Transform.String == nil || *tmpl.Transform.String != "AWS::Serverless-2016-10-31" {
		t.Errorf("Transform = %+v, want AWS::Serverless-2016-10-31", tmpl.Transform)
	}
	want := map[string]string{
		"SessionsTable":    "AWS::DynamoDB::Table",
		"StreamsBucket":    "AWS::S3::Bucket",
		"WakeQueue":        "AWS::SQS::Queue",
		"WakeDLQ":          "AWS::SQS::Queue",
		"HttpApi":          "AWS::Serverless::HttpApi",
		"OperatorFunction": "AWS::Serverless::Function",
		"ResumeFunction":   "AWS::Serverless::Function",
		"TickFunction":     "AWS::Serverless::Function",
	}
	for id, typ := range want {
		r, ok := tmpl.Resources[id]
		if !ok {
			t.Errorf("resource %s missing", id)
			continue
		}
		if got := r.AWSCloudFormationType(); got != typ {
			t.Errorf("%s: type %s, want %s", id, got, typ)
		}
	}
	for _, p := range []string{"JwtIssuer", "JwtAudience"} {
		if _, ok := tmpl.Parameters[p]; !ok {
			t.Errorf("parameter %s missing", p)
		}
	}
	for _, o := range []string{"ApiUrl", "TableName", "BucketName", "QueueUrl"} {
		if _, ok := tmpl.Outputs[o]; !ok {
			t.Errorf("output %s missing", o)
		}
	}
}

func TestReferencesResolve(t *testing.T) {
	t.Parallel()
	tr := tree(t)
	resources, _ := tr["Resources"].(map[string]any)
	params, _ := tr["Parameters"].(map[string]any)
	refs, err := provision.References(baton.Template())
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) == 0 {
		t.Fatal("no references found; the scanner is broken")
	}
	// SAM generates <function>Url (AWS::Lambda::Url) for a function with a
	// FunctionUrlConfig; templates may refer to it.
	generated := map[string]bool{}
	for id, fn := range resourcesOfType(tr, "AWS::Serverless::Function") {
		if at(fn, "Properties", "FunctionUrlConfig") != nil {
			generated[id+"Url"] = true
		}
	}
	for _, r := range refs {
		_, isRes := resources[r.Target]
		isRes = isRes || generated[r.Target]
		_, isParam := params[r.Target]
		isPseudo := slices.Contains(pseudoParameters(), r.Target)
		switch {
		case r.Func == "Fn::GetAtt" && !isRes:
			t.Errorf("%s: !GetAtt %s.%s: no such resource", r.Path, r.Target, r.Attribute)
		case r.Attribute != "" && !isRes:
			t.Errorf("%s: ${%s.%s}: no such resource", r.Path, r.Target, r.Attribute)
		case !isRes && !isParam && !isPseudo:
			t.Errorf("%s: %s %s: not a resource, parameter or pseudo parameter", r.Path, r.Func, r.Target)
		}
	}
}

// scoped reports whether an IAM Resource element (or SAM policy template
// parameter) names a resource of this stack: a Ref or GetAtt of a declared
// resource, or a Sub whose variables include one. Literal strings, "*" among
// them, are refused.
func scoped(v any, resources map[string]any) bool {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return false
	}
	declared := func(name string) bool { _, ok := resources[name]; return ok }
	switch {
	case m["Ref"] != nil:
		s, _ := m["Ref"].(string)
		return declared(s)
	case m["Fn::GetAtt"] != nil:
		l, _ := m["Fn::GetAtt"].([]any)
		if len(l) == 0 {
			return false
		}
		s, _ := l[0].(string)
		return declared(s)
	case m["Fn::Sub"] != nil:
		s, _ := m["Fn::Sub"].(string)
		if strings.HasPrefix(s, "*") {
			return false
		}
		for _, sm := range regexp.MustCompile(`\$\{([^}.!]+)`).FindAllStringSubmatch(s, -1) {
			if declared(sm[1]) {
				return true
			}
		}
	}
	return false
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

func checkStatements(t *testing.T, where string, doc any, resources map[string]any) {
	t.Helper()
	stmts := asList(at(doc, "Statement"))
	if len(stmts) == 0 {
		t.Errorf("%s: policy document without statements", where)
	}
	for i, s := range stmts {
		w := fmt.Sprintf("%s.Statement[%d]", where, i)
		// A conditional statement (!If [cond, statement, !Ref AWS::NoValue])
		// is checked as the statement it adds.
		if alts := asList(at(s, "Fn::If")); len(alts) == 3 && at(alts[2], "Ref") == "AWS::NoValue" {
			s = alts[1]
		}
		for _, k := range []string{"NotResource", "NotAction"} {
			if at(s, k) != nil {
				t.Errorf("%s: %s grants everything but a list", w, k)
			}
		}
		for _, a := range asList(at(s, "Action")) {
			if str, _ := a.(string); str == "*" || strings.HasSuffix(str, ":*") {
				t.Errorf("%s: Action %q is a wildcard", w, str)
			}
		}
		res := asList(at(s, "Resource"))
		if len(res) == 0 {
			t.Errorf("%s: no Resource", w)
		}
		if xrayOnly(asList(at(s, "Action"))) && len(res) == 1 && res[0] == "*" {
			continue // X-Ray's segment writes take no resource but "*"
		}
		for _, r := range res {
			if !scoped(r, resources) {
				t.Errorf("%s: Resource %v is not one of this stack's resources", w, r)
			}
		}
	}
}

// xrayOnly reports whether actions are all X-Ray segment writes, which
// IAM grants on no resource but "*".
func xrayOnly(actions []any) bool {
	for _, a := range actions {
		if a != "xray:PutTraceSegments" && a != "xray:PutTelemetryRecords" {
			return false
		}
	}
	return len(actions) > 0
}

func TestNoWildcardIAM(t *testing.T) {
	t.Parallel()
	tr := tree(t)
	resources, _ := tr["Resources"].(map[string]any)
	// A parameter that can only be one ARN scopes a statement as a resource does.
	resources = withARNParameters(t, tr, resources)
	checked := 0
	for id, r := range resourcesOfType(tr, "AWS::IAM::Role") {
		for i, p := range asList(at(r, "Properties", "Policies")) {
			checkStatements(t, fmt.Sprintf("%s.Policies[%d]", id, i), at(p, "PolicyDocument"), resources)
			checked++
		}
		for _, arn := range asList(at(r, "Properties", "ManagedPolicyArns")) {
			ref, _ := at(arn, "Ref").(string)
			if at(resources, ref, "Type") != "AWS::IAM::ManagedPolicy" {
				t.Errorf("%s: managed policy %v is not declared in this template (AWS managed policies grant on \"*\")", id, arn)
			}
		}
	}
	for _, typ := range []string{"AWS::IAM::ManagedPolicy", "AWS::IAM::Policy"} {
		for id, r := range resourcesOfType(tr, typ) {
			checkStatements(t, id, at(r, "Properties", "PolicyDocument"), resources)
			checked++
		}
	}
	// SAM function policies: inline documents, SAM policy templates and
	// managed policy names.
	for id, fn := range resourcesOfType(tr, "AWS::Serverless::Function") {
		for i, p := range asList(at(fn, "Properties", "Policies")) {
			w := fmt.Sprintf("%s.Policies[%d]", id, i)
			m, ok := p.(map[string]any)
			switch {
			case !ok:
				t.Errorf("%s: managed policy %v may grant on \"*\"; use a statement", w, p)
			case m["Statement"] != nil:
				checkStatements(t, w, m, resources)
			default:
				for name, params := range m {
					pm, _ := params.(map[string]any)
					if len(pm) == 0 {
						t.Errorf("%s: SAM policy template %s has no resource parameter, so it grants on \"*\"", w, name)
					}
					for k, v := range pm {
						if !scoped(v, resources) {
							t.Errorf("%s: SAM policy template %s.%s = %v is not one of this stack's resources", w, name, k, v)
						}
					}
				}
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no IAM policies found")
	}
}

// Without an explicit Role, SAM generates one with AWSLambdaBasicExecutionRole
// and, for an SQS event source, AWSLambdaSQSQueueExecutionRole, both of which
// grant on "*".
func TestFunctionsHaveOwnRoles(t *testing.T) {
	t.Parallel()
	tr := tree(t)
	resources, _ := tr["Resources"].(map[string]any)
	for id, fn := range resourcesOfType(tr, "AWS::Serverless::Function") {
		role := at(fn, "Properties", "Role")
		l, _ := at(role, "Fn::GetAtt").([]any)
		if len(l) != 2 || l[1] != "Arn" {
			t.Errorf("%s: Role %v, want !GetAtt <Role>.Arn", id, role)
			continue
		}
		name, _ := l[0].(string)
		if got := at(resources, name, "Type"); got != "AWS::IAM::Role" {
			t.Errorf("%s: role %s is %v, want AWS::IAM::Role", id, name, got)
		}
		if at(fn, "Properties", "Policies") != nil {
			t.Errorf("%s: Policies are ignored when Role is set; put them on %s", id, name)
		}
	}
}

func TestFunctionsRuntime(t *testing.T) {
	t.Parallel()
	tmpl, err := provision.Parse(baton.Template())
	if err != nil {
		t.Fatal(err)
	}
	g, err := tmpl.GetServerlessGlobalFunction()
	if err != nil {
		t.Fatalf("Globals.Function: %v", err)
	}
	fns := tmpl.GetAllServerlessFunctionResources()
	if len(fns) != 3 {
		t.Errorf("%d functions, want 3", len(fns))
	}
	for id, fn := range fns {
		runtime, handler, arch := fn.Runtime, fn.Handler, fn.Architectures
		if runtime == nil {
			runtime = g.Runtime
		}
		if handler == nil {
			handler = g.Handler
		}
		if arch == nil && g.Architectures != nil {
			arch = *g.Architectures
		}
		if aws.ToString(runtime) != "provided.al2023" {
			t.Errorf("%s: Runtime %q, want provided.al2023", id, aws.ToString(runtime))
		}
		if aws.ToString(handler) != "bootstrap" {
			t.Errorf("%s: Handler %q, want bootstrap", id, aws.ToString(handler))
		}
		if !slices.Equal(arch, []string{"arm64"}) {
			t.Errorf("%s: Architectures %v, want [arm64]", id, arch)
		}
		if bm := fn.AWSCloudFormationMetadata["BuildMethod"]; bm != "makefile" {
			t.Errorf("%s: Metadata.BuildMethod %v, want makefile", id, bm)
		}
		if fn.CodeUri == nil || aws.ToString(fn.CodeUri.String) != "." {
			t.Errorf("%s: CodeUri %+v, want \".\" (the repo root, built by make build-%s)", id, fn.CodeUri, id)
		}
	}
}

// TestOperatorRoutes: the HTTP API's routes are exactly the operator
// API's route table (operator.Routes, which holds internal/chat's), with the
// same method, path and auth: the public ones (the console's static assets
// and CORS preflights) without the authorizer, every other behind the JWT.
func TestOperatorRoutes(t *testing.T) {
	t.Parallel()
	tr := tree(t)
	var want, public []string
	for _, r := range operator.Routes() {
		route := r.Method + " " + r.Path
		want = append(want, route)
		if r.Public {
			public = append(public, route)
		}
	}
	var got []string
	events, _ := at(tr, "Resources", "OperatorFunction", "Properties", "Events").(map[string]any)
	for name, ev := range events {
		if at(ev, "Type") != "HttpApi" {
			t.Errorf("OperatorFunction event %s: type %v, want HttpApi", name, at(ev, "Type"))
			continue
		}
		if ref := at(ev, "Properties", "ApiId", "Ref"); ref != "HttpApi" {
			t.Errorf("OperatorFunction event %s: ApiId %v, want !Ref HttpApi", name, ref)
		}
		route := fmt.Sprintf("%v %v", at(ev, "Properties", "Method"), at(ev, "Properties", "Path"))
		auth := at(ev, "Properties", "Auth")
		switch {
		case slices.Contains(public, route):
			// The console's static assets and the chat's preflights: no
			// data, no authorizer.
			if at(auth, "Authorizer") != "NONE" || len(auth.(map[string]any)) != 1 {
				t.Errorf("OperatorFunction event %s (%s): Auth %v, want exactly {Authorizer: NONE}", name, route, auth)
			}
		case auth != nil:
			t.Errorf("OperatorFunction event %s overrides the JWT authorizer: %v", name, auth)
		}
		got = append(got, route)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("routes\n got %v\nwant %v", got, want)
	}

	auth := at(tr, "Resources", "HttpApi", "Properties", "Auth")
	def, _ := at(auth, "DefaultAuthorizer").(string)
	jwt := at(auth, "Authorizers", def, "JwtConfiguration")
	if def == "" || jwt == nil {
		t.Fatalf("HttpApi has no default JWT authorizer: %v", auth)
	}
	// The issuer is JwtIssuer, or with none the stack's own user pool; the
	// audience JwtAudience, or that pool's client.
	iss := asList(at(jwt, "issuer", "Fn::If"))
	if len(iss) != 3 || iss[0] != "OwnUserPool" || !strings.Contains(fmt.Sprint(at(iss[1], "Fn::Sub")), "${UserPool}") ||
		at(iss[2], "Ref") != "JwtIssuer" {
		t.Errorf("JWT issuer %v, want !If [OwnUserPool, the pool's issuer, !Ref JwtIssuer]", at(jwt, "issuer"))
	}
	aud := asList(at(jwt, "audience"))
	if len(aud) != 1 {
		t.Fatalf("JWT audience %v, want one", aud)
	}
	if a := asList(at(aud[0], "Fn::If")); len(a) != 3 || a[0] != "OwnUserPool" || at(a[1], "Ref") != "UserPoolClient" || at(a[2], "Ref") != "JwtAudience" {
		t.Errorf("JWT audience %v, want [!If [OwnUserPool, !Ref UserPoolClient, !Ref JwtAudience]]", aud)
	}
}

func TestResumeAndTickEvents(t *testing.T) {
	t.Parallel()
	tr := tree(t)
	fn := at(tr, "Resources", "ResumeFunction", "Properties")
	var sqsEvents int
	events, _ := at(fn, "Events").(map[string]any)
	for name, ev := range events {
		if at(ev, "Type") != "SQS" {
			t.Errorf("ResumeFunction event %s: type %v, want SQS", name, at(ev, "Type"))
			continue
		}
		sqsEvents++
		p := at(ev, "Properties")
		if q := at(p, "Queue", "Fn::GetAtt"); !reflect.DeepEqual(q, []any{"WakeQueue", "Arn"}) {
			t.Errorf("ResumeFunction event %s: Queue %v, want !GetAtt WakeQueue.Arn", name, at(p, "Queue"))
		}
		if b := at(p, "BatchSize"); b != 10 {
			t.Errorf("ResumeFunction event %s: BatchSize %v, want 10", name, b)
		}
		if !slices.Contains(asList(at(p, "FunctionResponseTypes")), any("ReportBatchItemFailures")) {
			t.Errorf("ResumeFunction event %s: no ReportBatchItemFailures", name)
		}
	}
	if sqsEvents != 1 {
		t.Errorf("ResumeFunction has %d SQS events, want 1", sqsEvents)
	}
	timeout, _ := at(fn, "Timeout").(int)
	visibility, _ := at(tr, "Resources", "WakeQueue", "Properties", "VisibilityTimeout").(int)
	if timeout != 900 || visibility < 6*timeout {
		t.Errorf("ResumeFunction Timeout %d, WakeQueue VisibilityTimeout %d: want 900 and at least six times it", timeout, visibility)
	}
	if got := at(tr, "Resources", "WakeQueue", "Properties", "RedrivePolicy", "maxReceiveCount"); got != 10 {
		t.Errorf("WakeQueue maxReceiveCount %v, want 10", got)
	}

	var schedules []any
	tickEvents, _ := at(tr, "Resources", "TickFunction", "Properties", "Events").(map[string]any)
	for _, ev := range tickEvents {
		if at(ev, "Type") == "Schedule" {
			schedules = append(schedules, at(ev, "Properties", "Schedule"))
		}
	}
	slices.SortFunc(schedules, func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	if !reflect.DeepEqual(schedules, []any{"rate(1 day)", "rate(1 minute)"}) {
		t.Errorf("TickFunction schedules %v, want the tick's rate(1 minute) and the retention sweep's rate(1 day)", schedules)
	}
	if in := at(tickEvents["Retention"], "Properties", "Input"); in != `{"detail-type":"`+tick.RetentionDetailType+`"}` {
		t.Errorf("TickFunction Retention schedule Input %v, want the detail-type %s", in, tick.RetentionDetailType)
	}
}

func TestStateResourcesHardened(t *testing.T) {
	t.Parallel()
	tr := tree(t)
	table := at(tr, "Resources", "SessionsTable", "Properties")
	if at(table, "BillingMode") != "PAY_PER_REQUEST" {
		t.Errorf("SessionsTable BillingMode %v", at(table, "BillingMode"))
	}
	if at(table, "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled") != true {
		t.Error("SessionsTable: point-in-time recovery is off")
	}
	if at(table, "SSESpecification", "SSEEnabled") != true {
		t.Error("SessionsTable: SSE is off")
	}
	bucket := at(tr, "Resources", "StreamsBucket", "Properties")
	rules := asList(at(bucket, "BucketEncryption", "ServerSideEncryptionConfiguration"))
	if len(rules) == 0 || !slices.Contains([]any{"AES256", "aws:kms"}, at(rules[0], "ServerSideEncryptionByDefault", "SSEAlgorithm")) {
		t.Errorf("StreamsBucket encryption %v", rules)
	}
	for _, k := range []string{"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"} {
		if at(bucket, "PublicAccessBlockConfiguration", k) != true {
			t.Errorf("StreamsBucket PublicAccessBlockConfiguration.%s is not true", k)
		}
	}
	own := asList(at(bucket, "OwnershipControls", "Rules"))
	if len(own) != 1 || at(own[0], "ObjectOwnership") != "BucketOwnerEnforced" {
		t.Errorf("StreamsBucket OwnershipControls %v, want BucketOwnerEnforced", own)
	}
	for _, q := range []string{"WakeQueue", "WakeDLQ"} {
		if at(tr, "Resources", q, "Properties", "SqsManagedSseEnabled") != true {
			t.Errorf("%s: SqsManagedSseEnabled is not true", q)
		}
	}
}

func TestFunctionEnv(t *testing.T) {
	t.Parallel()
	env, err := provision.FunctionEnv(baton.Template())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"BATON_TABLE":        "!Ref SessionsTable",
		"BATON_BUCKET":       "!Ref StreamsBucket",
		"BATON_QUEUE_URL":    "!Ref WakeQueue",
		"BATON_AGENTS":       "!Ref AgentsConfig",
		"BATON_WAKE_GRACE":   "2m",
		"LOG_FORMAT":         "json",
		"BATON_CHAT_AGENT":   "!Ref ChatAgent",
		"BATON_CHAT_ORIGINS": "!Ref ChatOrigins",
		"BATON_MCP_AGENTS":   "!Ref McpAgents",
		// The HTTP API's authorizer's own (TestOperatorRoutes).
		"BATON_JWT_ISSUER":     `!If ["OwnUserPool","!Sub https://cognito-idp.${AWS::Region}.amazonaws.com/${UserPool}","!Ref JwtIssuer"]`,
		"BATON_JWT_AUDIENCE":   `!If ["OwnUserPool","!Ref UserPoolClient","!Ref JwtAudience"]`,
		"BATON_JWKS_URL":       "!Ref JwksUrl",
		"BATON_HOLD":           "14m",
		"BATON_RETENTION_DAYS": "!Ref RetentionDays",
		"BATON_CLAIMS_POLL":    "30s",
		// Streams go to the Express directory bucket when the stack says so.
		"BATON_STREAM_BUCKET":      `!If ["ExpressStreams","!Ref ExpressStreamsBucket","!Ref StreamsBucket"]`,
		"BATON_STREAM_BUCKET_TYPE": "!Ref StreamBucketType",
		// Callback tools' URLs are under the HTTP API's.
		"BATON_CALLBACK_URL": "!Sub https://${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}",
	}
	for _, fn := range []string{"OperatorFunction", "ResumeFunction", "TickFunction"} {
		want := maps.Clone(want)
		if fn == "ResumeFunction" {
			maps.Copy(want, resumeKeyEnv)
			// Tracing=adot points the resume function's OTLP exporter at
			// the ADOT layer's collector; empty leaves tracing off.
			want["OTEL_EXPORTER_OTLP_ENDPOINT"] = `!If ["TracingAdot","http://localhost:4318",""]`
		}
		if got := env[fn]; !maps.Equal(got, want) {
			t.Errorf("%s environment\n got %v\nwant %v", fn, got, want)
		}
	}
}

// assertEnvContract checks that the environment variables each function's
// code reads are exactly those the template sets for it (reads maps a
// function's logical id to the variables its code reads).
//
// AWS_* variables that Lambda itself sets are left out of reads.
func assertEnvContract(t *testing.T, reads map[string][]string) {
	t.Helper()
	env, err := provision.FunctionEnv(baton.Template())
	if err != nil {
		t.Fatal(err)
	}
	for fn, vars := range reads {
		set := slices.Sorted(maps.Keys(env[fn]))
		got := slices.Clone(vars)
		slices.Sort(got)
		got = slices.Compact(got)
		if !slices.Equal(got, set) {
			t.Errorf("%s: code reads %v, template sets %v", fn, got, set)
		}
	}
	for fn := range env {
		if _, ok := reads[fn]; !ok {
			t.Errorf("%s: no list of the variables its code reads", fn)
		}
	}
}

// TestEnvContract: all three functions build their App with host.New (app.FromOS),
// which reads app.Vars(); TestGetenvOnlyThroughApp proves no other code a
// function runs reads the environment on its own.
func TestEnvContract(t *testing.T) {
	t.Parallel()
	vars := app.Vars()
	assertEnvContract(t, map[string][]string{
		// The resume function also reads the model key variables and the
		// OpenTelemetry SDK's own variables, as otel.FromEnv and its OTLP
		// exporter do; the template sets the endpoint.
		"OperatorFunction": vars, "ResumeFunction": append(append(slices.Clone(vars), slices.Collect(maps.Keys(resumeKeyEnv))...), "OTEL_EXPORTER_OTLP_ENDPOINT"), "TickFunction": vars,
	})
}

// TestGetenvOnlyThroughApp scans the production code for os.Getenv and
// os.LookupEnv calls: outside internal/app they may read only AWS_* variables
// (the SDK's own configuration) or, in the local-only packages, the
// emulator's.
func TestGetenvOnlyThroughApp(t *testing.T) {
	t.Parallel()
	localOnly := map[string]bool{"cmd/baton": true, "internal/emulator": true, "internal/devserver": true}
	root := ".."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			// examples/ are programs of their own, with their own variables.
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || rel == "test" || rel == "localstack" || rel == "examples" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "Getenv" && sel.Sel.Name != "LookupEnv") {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "os" || len(call.Args) != 1 {
				return true
			}
			switch arg := call.Args[0].(type) {
			case *ast.BasicLit:
				name := strings.Trim(arg.Value, "\"`")
				if strings.HasPrefix(name, "AWS_") || (localOnly[dir] && strings.HasPrefix(name, "KUMO_")) {
					return true
				}
				t.Errorf("%s: reads %s outside internal/app", rel, name)
			case *ast.Ident:
				if dir != "internal/app" {
					t.Errorf("%s: reads the variable named by %s outside internal/app", rel, arg.Name)
				}
			default:
				t.Errorf("%s: reads a computed variable name", rel)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestProvisionMatchesTemplate(t *testing.T) {
	t.Parallel()
	e := emulator.Start()
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	names := provision.DefaultNames()

	// kumo's state is process-global and LocalStack's outlives the test:
	// the second call must find everything in place and converge.
	var res provision.Resources
	for i := range 2 {
		var err error
		res, err = provision.Provision(ctx, e.Clients, baton.Template(), names)
		if err != nil {
			t.Fatalf("Provision #%d: %v", i+1, err)
		}
	}
	if res.Table != names.Table || res.Bucket != names.Bucket || res.QueueURL == "" || res.DLQURL == "" {
		t.Fatalf("Resources = %+v", res)
	}

	plan, err := provision.NewPlan(baton.Template(), names)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := e.Clients.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(names.Table)})
	if err != nil {
		t.Fatal(err)
	}
	if diff := provision.TableDiff(plan.Table, desc.Table); diff != "" {
		t.Errorf("table differs from the template: %s", diff)
	}
	// Independently of TableDiff: the hard-coded shape the code relies on.
	var gsis []string
	for _, g := range desc.Table.GlobalSecondaryIndexes {
		var ks []string
		for _, k := range g.KeySchema {
			ks = append(ks, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
		}
		gsis = append(gsis, aws.ToString(g.IndexName)+"("+strings.Join(ks, ",")+")")
	}
	slices.Sort(gsis)
	if want := []string{"byDue(dueShard:HASH,due:RANGE)", "byOwner(owner:HASH,created:RANGE)"}; !slices.Equal(gsis, want) {
		t.Errorf("GSIs %v, want %v", gsis, want)
	}

	dlq, err := e.Clients.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(res.DLQURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
	})
	if err != nil {
		t.Fatal(err)
	}
	q, err := e.Clients.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(res.QueueURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
	})
	if err != nil {
		t.Fatal(err)
	}
	var rp struct {
		DeadLetterTargetArn string          `json:"deadLetterTargetArn"`
		MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(q.Attributes["RedrivePolicy"]), &rp); err != nil {
		t.Fatalf("RedrivePolicy %q: %v", q.Attributes["RedrivePolicy"], err)
	}
	if dlqARN := dlq.Attributes["QueueArn"]; dlqARN == "" || rp.DeadLetterTargetArn != dlqARN {
		t.Errorf("RedrivePolicy names %q, want the DLQ %q", rp.DeadLetterTargetArn, dlqARN)
	}
	if n, _ := strconv.Atoi(strings.Trim(string(rp.MaxReceiveCount), `"`)); n != plan.MaxReceiveCount {
		t.Errorf("maxReceiveCount %s, want %d", rp.MaxReceiveCount, plan.MaxReceiveCount)
	}
	if got, want := q.Attributes["VisibilityTimeout"], plan.Queue.Attributes["VisibilityTimeout"]; got != want {
		t.Errorf("VisibilityTimeout %s, want %s", got, want)
	}

	if _, err := e.Clients.S3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(names.Bucket)}); err != nil {
		t.Errorf("bucket %s: %v", names.Bucket, err)
	}
	pab, err := e.Clients.S3.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: aws.String(names.Bucket)})
	if err != nil {
		t.Errorf("public access block: %v", err)
	} else if c := pab.PublicAccessBlockConfiguration; c == nil || !aws.ToBool(c.BlockPublicAcls) || !aws.ToBool(c.RestrictPublicBuckets) {
		t.Errorf("public access block %+v", c)
	}
}

func TestProvisionRefusesUnknownProperties(t *testing.T) {
	t.Parallel()
	tmpl := strings.Replace(string(baton.Template()),
		"      SqsManagedSseEnabled: true\n      RedrivePolicy:",
		"      SqsManagedSseEnabled: true\n      FifoQueue: true\n      RedrivePolicy:", 1)
	if tmpl == string(baton.Template()) {
		t.Fatal("test edit did not apply; update the needle")
	}
	_, err := provision.NewPlan([]byte(tmpl), provision.DefaultNames())
	if err == nil || !strings.Contains(err.Error(), "FifoQueue") {
		t.Errorf("NewPlan with an unhandled property: err = %v, want one naming FifoQueue", err)
	}
}

// heredoc returns the body of the heredoc whose delimiter is marker.
func heredoc(t *testing.T, script, marker string) string {
	t.Helper()
	lines := strings.Split(script, "\n")
	for i, l := range lines {
		if !strings.Contains(l, "<<'"+marker+"'") && !strings.HasSuffix(l, "<<"+marker) {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			if lines[j] == marker {
				return strings.Join(lines[i+1:j], "\n")
			}
		}
	}
	t.Fatalf("%s: no heredoc %s", scriptPath, marker)
	return ""
}

func scriptVar(t *testing.T, script, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + `=(\S+)$`).FindStringSubmatch(script)
	if m == nil {
		t.Fatalf("%s: no %s=", scriptPath, name)
	}
	return strings.Trim(m[1], `"'`)
}

func decodeJSON(t *testing.T, what, s string, v any) {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		t.Fatalf("%s: %s: %v", scriptPath, what, err)
	}
}

func jsonString(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

func TestLocalStackScriptMatchesTemplate(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(scriptPath)
	if err != nil {
		t.Fatal(err)
	}
	script := string(raw)
	// LocalStack runs only executable hooks with a shebang.
	if fi, err := os.Stat(scriptPath); err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("%s is not executable (chmod +x)", scriptPath)
	}
	if !strings.HasPrefix(script, "#!") {
		t.Errorf("%s has no shebang", scriptPath)
	}
	names := provision.DefaultNames()
	for v, want := range map[string]string{"TABLE": names.Table, "BUCKET": names.Bucket, "QUEUE": names.Queue, "DLQ": names.DLQ()} {
		if got := scriptVar(t, script, v); got != want {
			t.Errorf("%s: %s=%s, want %s", scriptPath, v, got, want)
		}
	}
	plan, err := provision.NewPlan(baton.Template(), names)
	if err != nil {
		t.Fatal(err)
	}

	var table dynamodb.CreateTableInput
	decodeJSON(t, "TABLE_JSON", heredoc(t, script, "TABLE_JSON"), &table)
	table.TableName = aws.String(names.Table)
	if got, want := jsonString(&table), jsonString(plan.Table); got != want {
		t.Errorf("TABLE_JSON differs from SessionsTable\n got %s\nwant %s", got, want)
	}

	var enc s3types.ServerSideEncryptionConfiguration
	decodeJSON(t, "ENCRYPTION_JSON", heredoc(t, script, "ENCRYPTION_JSON"), &enc)
	if len(enc.Rules) != 1 || enc.Rules[0].ApplyServerSideEncryptionByDefault == nil ||
		string(enc.Rules[0].ApplyServerSideEncryptionByDefault.SSEAlgorithm) != plan.Bucket.SSEAlgorithm {
		t.Errorf("ENCRYPTION_JSON %s, want SSEAlgorithm %s", jsonString(enc), plan.Bucket.SSEAlgorithm)
	}
	var pab s3types.PublicAccessBlockConfiguration
	decodeJSON(t, "PUBLIC_ACCESS_BLOCK_JSON", heredoc(t, script, "PUBLIC_ACCESS_BLOCK_JSON"), &pab)
	if got, want := jsonString(pab), jsonString(plan.Bucket.PublicAccessBlock); got != want {
		t.Errorf("PUBLIC_ACCESS_BLOCK_JSON\n got %s\nwant %s", got, want)
	}

	var dlqAttrs map[string]string
	decodeJSON(t, "DLQ_ATTRIBUTES_JSON", heredoc(t, script, "DLQ_ATTRIBUTES_JSON"), &dlqAttrs)
	if !maps.Equal(dlqAttrs, plan.DLQ.Attributes) {
		t.Errorf("DLQ_ATTRIBUTES_JSON %v, want %v", dlqAttrs, plan.DLQ.Attributes)
	}

	const arn = "arn:aws:sqs:us-east-1:000000000000:" + "dlq-placeholder"
	var queueAttrs map[string]string
	body := strings.ReplaceAll(heredoc(t, script, "QUEUE_ATTRIBUTES_JSON"), "${DLQ_ARN}", arn)
	decodeJSON(t, "QUEUE_ATTRIBUTES_JSON", body, &queueAttrs)
	wantRP, err := provision.RedrivePolicy(arn, plan.MaxReceiveCount)
	if err != nil {
		t.Fatal(err)
	}
	var gotRP, wantRPv any
	if err := json.Unmarshal([]byte(queueAttrs["RedrivePolicy"]), &gotRP); err != nil {
		t.Errorf("QUEUE_ATTRIBUTES_JSON RedrivePolicy %q: %v", queueAttrs["RedrivePolicy"], err)
	}
	_ = json.Unmarshal([]byte(wantRP), &wantRPv)
	if !reflect.DeepEqual(gotRP, wantRPv) {
		t.Errorf("QUEUE_ATTRIBUTES_JSON RedrivePolicy %v, want %v", gotRP, wantRPv)
	}
	delete(queueAttrs, "RedrivePolicy")
	wantQ := maps.Clone(plan.Queue.Attributes)
	delete(wantQ, "RedrivePolicy")
	if !maps.Equal(queueAttrs, wantQ) {
		t.Errorf("QUEUE_ATTRIBUTES_JSON %v, want %v", queueAttrs, wantQ)
	}
}

// TestLocalStackScriptRuns runs the LocalStack hook against the test emulator
// with the AWS CLI standing in for awslocal, then checks the result with
// Provision (which refuses a table that differs from the template). Skipped
// where the AWS CLI is not installed.
func TestLocalStackScriptRuns(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the AWS CLI a dozen times")
	}
	awsCLI, err := exec.LookPath("aws")
	if err != nil {
		t.Skip("no aws CLI on PATH")
	}
	e := emulator.Start()
	defer e.Close()

	bin := t.TempDir()
	shim := fmt.Sprintf("#!/bin/sh\nexec %q --endpoint-url %q \"$@\"\n", awsCLI, e.URL)
	if err := os.WriteFile(filepath.Join(bin, "awslocal"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", scriptPath)
	cmd.Env = append(os.Environ(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_DEFAULT_REGION=us-east-1",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", scriptPath, err, out)
	}
	if _, err := provision.Provision(ctx, e.Clients, baton.Template(), provision.DefaultNames()); err != nil {
		if errors.Is(err, provision.ErrMismatch) {
			t.Fatalf("the script's table differs from the template: %v", err)
		}
		t.Fatal(err)
	}
}

// TestStreamingDoor: the operator function streams through a Function URL
// (RESPONSE_STREAM; no authorizer there, the function verifies JWTs), its
// Timeout is Lambda's 900 s, and the hold ends a held response at least 30
// s before the invocation would be cut (host.BufferedHold well within the
// HTTP API's 30 s).
func TestStreamingDoor(t *testing.T) {
	t.Parallel()
	tr := tree(t)
	fn := at(tr, "Resources", "OperatorFunction", "Properties")
	if m, a := at(fn, "FunctionUrlConfig", "InvokeMode"), at(fn, "FunctionUrlConfig", "AuthType"); m != "RESPONSE_STREAM" || a != "NONE" {
		t.Errorf("OperatorFunction FunctionUrlConfig: InvokeMode %v, AuthType %v; want RESPONSE_STREAM, NONE", m, a)
	}
	if at(tr, "Outputs", "StreamUrl") == nil {
		t.Error("no StreamUrl output")
	}
	timeout, _ := at(fn, "Timeout").(int)
	env, err := provision.FunctionEnv(baton.Template())
	if err != nil {
		t.Fatal(err)
	}
	hold, err := time.ParseDuration(env["OperatorFunction"]["BATON_HOLD"])
	if err != nil {
		t.Fatalf("BATON_HOLD: %v", err)
	}
	if timeout != 900 || hold+30*time.Second > time.Duration(timeout)*time.Second {
		t.Errorf("OperatorFunction Timeout %d s, BATON_HOLD %v: want 900 s and a hold ending 30 s before it", timeout, hold)
	}
	if host.BufferedHold+3*time.Second > 30*time.Second {
		t.Errorf("BufferedHold %v leaves the HTTP API's 30 s no margin", host.BufferedHold)
	}
}

// TestTracingOption: Tracing=adot adds the ADOT layer and the OTLP
// endpoint to the resume function, xray turns on Lambda's X-Ray tracing on
// every function, and X-Ray writes are granted only when traced.
func TestTracingOption(t *testing.T) {
	t.Parallel()
	tr := tree(t)
	if got := at(tr, "Parameters", "Tracing", "AllowedValues"); fmt.Sprint(got) != "[none adot xray]" {
		t.Errorf("Tracing allows %v", got)
	}
	if got := at(tr, "Globals", "Function", "Tracing", "Fn::If"); fmt.Sprint(got) != "[TracingXray Active PassThrough]" {
		t.Errorf("Globals Tracing = %v, want Active only for xray", got)
	}
	layers := asList(at(tr, "Resources", "ResumeFunction", "Properties", "Layers"))
	if len(layers) != 1 || fmt.Sprint(at(layers[0], "Fn::If")) != "[TracingAdot map[Ref:AdotLayerArn] map[Ref:AWS::NoValue]]" {
		t.Errorf("ResumeFunction Layers = %v, want the ADOT layer for adot only", layers)
	}
	for role, cond := range map[string]string{"ResumeRole": "Traced", "OperatorRole": "TracingXray", "TickRole": "TracingXray"} {
		found := false
		for _, s := range asList(at(asList(at(tr, "Resources", role, "Properties", "Policies"))[0], "PolicyDocument", "Statement")) {
			if alts := asList(at(s, "Fn::If")); len(alts) == 3 && at(alts[1], "Sid") == "XRay" {
				found = alts[0] == cond
			}
		}
		if !found {
			t.Errorf("%s: no X-Ray statement under %s", role, cond)
		}
	}
}
