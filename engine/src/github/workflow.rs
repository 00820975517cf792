//! The GitHub Actions workflow `sift ci init github` writes: the pull-request bot on every
//! push to a pull request, with the repository's history checked out at the head commit, sift's
//! caches kept between runs by the base commit, the review posted, and SARIF uploaded.

/// Where the workflow goes, relative to the repository root.
pub const PATH: &str = ".github/workflows/sift-review.yml";

/// The workflow's text; `install` is the step's command that puts `sift` on the `PATH`.
pub fn text(install: &str) -> String {
    TEMPLATE.replace("{install}", install)
}

/// How the workflow installs sift unless told otherwise: from the repository a repository
/// variable names.
pub const DEFAULT_INSTALL: &str =
    "cargo install --locked --git \"${{ vars.SIFT_REPOSITORY }}\" sift-lsp";

/// What the repository must allow, said after the file is written.
pub const NEEDS: &[&str] = &[
    "Settings → Actions → General → Workflow permissions: the job asks for `pull-requests: write` and `security-events: write` itself; an organisation that caps the token at read-only must allow them.",
    "The repository variable SIFT_REPOSITORY (Settings → Secrets and variables → Actions → Variables): the git URL sift is installed from, unless you changed the install step.",
    "Pull requests from forks get a read-only token: their review is printed in the job's log instead of posted.",
    "Code scanning (for the SARIF upload): on for public repositories; private ones need GitHub Advanced Security, or remove the last step.",
];

const TEMPLATE: &str = r#"# Written by `sift ci init github`. sift reviews every push to a pull request and posts one
# review: one thread per finding across pushes, marked fixed when the finding goes, dismissed
# when someone with write access replies `/sift wrong <reason>` or `/sift noise <reason>` (or
# gives it a 👎). See docs/github.md of sift.
name: sift review

on:
  pull_request:
    # closed: a merged pull request's last run records the findings left open (no review).
    types: [opened, synchronize, reopened, closed]

permissions:
  contents: read
  pull-requests: write
  security-events: write

concurrency:
  group: sift-review-${{ github.event.pull_request.number }}
  cancel-in-progress: true

jobs:
  review:
    # A pull request closed without merging has nothing left to record.
    if: github.event.action != 'closed' || github.event.pull_request.merged
    runs-on: ubuntu-latest
    timeout-minutes: 30
    steps:
      - uses: actions/checkout@v4
        with:
          # The head commit (not the merge commit), so comments land on the lines GitHub
          # shows; the whole history, for the merge-base and the fix history.
          ref: ${{ github.event.pull_request.head.sha }}
          fetch-depth: 0

      - name: Cache the sift binary
        id: sift-bin
        uses: actions/cache@v4
        with:
          path: ~/.cargo/bin/sift
          key: sift-bin-${{ runner.os }}-${{ vars.SIFT_REPOSITORY }}

      - name: Install sift
        if: steps.sift-bin.outputs.cache-hit != 'true'
        run: {install}

      - name: Cache sift's index and review caches, by the base commit
        uses: actions/cache@v4
        with:
          path: |
            .sift/index
            .sift/vectors
            .sift/cache
          key: sift-${{ runner.os }}-${{ github.event.pull_request.base.sha }}
          restore-keys: sift-${{ runner.os }}-

      - name: Review and post
        env:
          GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}
        run: sift review --post github --format sarif --fail-on error > sift.sarif

      - name: Upload the findings to code scanning
        if: always() && github.event.action != 'closed' && hashFiles('sift.sarif') != ''
        uses: github/codeql-action/upload-sarif@v3
        with:
          sarif_file: sift.sarif
          category: sift
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workflow_checks_out_the_head_and_passes_the_token() {
        let text = text(DEFAULT_INSTALL);
        assert!(text.contains("ref: ${{ github.event.pull_request.head.sha }}"));
        assert!(text.contains("fetch-depth: 0"));
        assert!(text.contains("GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}"));
        assert!(text.contains("sift review --post github"));
        assert!(text.contains("run: cargo install --locked --git"));
        assert!(!text.contains("{install}"));
    }
}
