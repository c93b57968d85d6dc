// Package reporters turns a finished run (result.Report) into what people and
// CI read: the terminal table, report.json, junit.xml, summary.md, and the raw
// requests.jsonl written while the run goes on, plus the live progress bar.
//
// Every reporter is a pure function of the result model: nothing here
// measures, aggregates or decides a check. A number printed here is the number
// in the report, formatted; it is never recomputed, so the table, the JSON and
// the JUnit file cannot disagree.
package reporters
