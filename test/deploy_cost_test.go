package test

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// billedTypes are the resource types AWS bills for, by the row of the
// Deploy page's cost table that must name each resource of the type.
// freeTypes cost nothing by themselves. A type in neither set fails
// TestDeployCostTable: decide which it is, and price it on the page.
var (
	billedTypes = []string{
		"AWS::DynamoDB::Table", "AWS::S3::Bucket", "AWS::S3Express::DirectoryBucket",
		"AWS::SQS::Queue", "AWS::Serverless::HttpApi", "AWS::Cognito::UserPool",
		"AWS::Logs::LogGroup", "AWS::Serverless::Function", "AWS::CloudWatch::Dashboard",
		"AWS::CloudWatch::Alarm",
	}
	freeTypes = []string{"AWS::IAM::Role", "AWS::IAM::ManagedPolicy", "AWS::Cognito::UserPoolClient"}
	// billedEvents are the function event types that bill (an SQS poller)
	// or must be shown free (a schedule).
	billedEvents = map[string]string{"SQS": "SQS poller", "Schedule": "schedules"}
)

const deployPage = "../docs/deploy.md"

type costRow struct {
	resource    string
	idle, turns float64
}

// costTable reads the Deploy page's cost table: its rows, and its total.
func costTable(t *testing.T, page string) (rows []costRow, total costRow) {
	t.Helper()
	i := strings.Index(page, "| resource | billed for | idle / month | per 1,000 turns |")
	if i < 0 {
		t.Fatalf("%s has no cost table", deployPage)
	}
	money := func(cell string) float64 {
		v, err := strconv.ParseFloat(strings.Trim(cell, " *$"), 64)
		if err != nil {
			t.Fatalf("cost table: %q is not an amount: %v", cell, err)
		}
		return v
	}
	for _, line := range strings.Split(page[i:], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 {
			t.Fatalf("cost table row %q has %d cells", line, len(cells))
		}
		r := costRow{resource: strings.TrimSpace(cells[0]), idle: money(cells[2]), turns: money(cells[3])}
		if strings.Contains(r.resource, "total") {
			total = r
			continue
		}
		rows = append(rows, r)
	}
	return rows, total
}

// TestDeployCostTable keeps the Deploy page's cost table in step with the
// template: every billed resource, and every function's SQS poller and
// schedules, is named by a row; every resource a row names is in the
// template; and the total is the sum of the rows.
func TestDeployCostTable(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(deployPage)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := tree(t)["Resources"].(map[string]any)
	for _, p := range costProblems(t, string(b), res) {
		t.Error(p)
	}
}

// TestCostTableCheckerBites: the checker finds a billed resource the table
// does not name, a type it does not know, a row naming no resource, and a
// total that does not add up.
func TestCostTableCheckerBites(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(deployPage)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	fresh := func() map[string]any { r, _ := tree(t)["Resources"].(map[string]any); return r }
	if p := costProblems(t, page, fresh()); len(p) != 0 {
		t.Fatalf("the page and template disagree already: %v", p)
	}
	gained := fresh()
	gained["AuditQueue"] = map[string]any{"Type": "AWS::SQS::Queue"}
	unknown := fresh()
	unknown["Topic"] = map[string]any{"Type": "AWS::SNS::Topic"}
	lost := fresh()
	delete(lost, "Dashboard")
	for name, c := range map[string]struct {
		page string
		res  map[string]any
		want string
	}{
		"a billed resource gained": {page, gained, "AuditQueue (AWS::SQS::Queue) is billed"},
		"an unknown type":          {page, unknown, "AWS::SNS::Topic, which the cost table test does not know"},
		"a resource gone":          {page, lost, "names Dashboard, which the template does not have"},
		"a wrong total":            {strings.Replace(page, "**$5.0614**", "**$5.0000**", 1), fresh(), "rows add up to"},
	} {
		got := strings.Join(costProblems(t, c.page, c.res), "\n")
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: problems %q, want one with %q", name, got, c.want)
		}
	}
}

// costProblems holds the cost table of page against the template's
// resources.
func costProblems(t *testing.T, page string, res map[string]any) []string {
	t.Helper()
	rows, total := costTable(t, page)
	var out []string
	named := map[string]string{} // resource id -> its row
	ticked := regexp.MustCompile("`([A-Za-z0-9]+)`")
	for _, r := range rows {
		for _, m := range ticked.FindAllStringSubmatch(r.resource, -1) {
			named[m[1]] = r.resource
		}
	}
	for id, v := range res {
		m, _ := v.(map[string]any)
		typ, _ := m["Type"].(string)
		switch {
		case slices.Contains(freeTypes, typ):
		case slices.Contains(billedTypes, typ):
			if _, ok := named[id]; !ok {
				out = append(out, fmt.Sprintf("the template's %s (%s) is billed, but no row of the cost table in %s names it", id, typ, deployPage))
			}
		default:
			out = append(out, fmt.Sprintf("the template's %s has type %s, which the cost table test does not know: add it to billedTypes (and a row to %s) or to freeTypes", id, typ, deployPage))
		}
		events, _ := at(m, "Properties", "Events").(map[string]any)
		for _, e := range events {
			et, _ := at(e, "Type").(string)
			if suffix, ok := billedEvents[et]; ok && !rowNamed(rows, fmt.Sprintf("`%s` %s", id, suffix)) {
				out = append(out, fmt.Sprintf("%s has a %s event, but no cost table row is %q", id, et, fmt.Sprintf("`%s` %s", id, suffix)))
			}
		}
	}
	for id, row := range named {
		if _, ok := res[id]; !ok {
			out = append(out, fmt.Sprintf("cost table row %q names %s, which the template does not have", row, id))
		}
	}
	var idle, turns float64
	for _, r := range rows {
		idle += r.idle
		turns += r.turns
	}
	if math.Abs(idle-total.idle) > 0.00015 || math.Abs(turns-total.turns) > 0.00015 {
		out = append(out, fmt.Sprintf("cost table total is $%.4f idle and $%.4f per 1,000 turns; its rows add up to $%.4f and $%.4f", total.idle, total.turns, idle, turns))
	}
	return out
}

func rowNamed(rows []costRow, name string) bool {
	return slices.ContainsFunc(rows, func(r costRow) bool { return strings.HasPrefix(r.resource, name) })
}
