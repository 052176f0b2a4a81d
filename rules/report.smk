# The report (docs/evaluation.md, "Figures and the report"): the evaluation tables (one job over every
# condition's scores, one bootstrap stream), each figure (one job each, from the tables it
# reads) and the HTML page. Every file is a catalogue entry (postrisk.grid.artefacts): a new
# table or figure is one entry and one builder function, and these rules pick it up.


rule tables:
    input:
        scores=all_score_tables,
        instances=path_of("instances"),
        disentanglement=all_disentanglement_runs,
    output:
        tables=primary_files(*stage_tables("tables")),
        page=path_of("tables_page"),
    params:
        ids=stage_tables("tables"),
        scale=config["scale"],
        correlation=config["disentanglement"]["correlation"],
        definition=config["disentanglement"]["definition"],
    log:
        SIMPLE["tables"].log,
    benchmark:
        SIMPLE["tables"].benchmark
    conda:
        env("core")
    threads: threads_of(SIMPLE["tables"])
    resources:
        **resources_of(SIMPLE["tables"]),
    script:
        "../scripts/tables.py"


rule figure:
    input:
        unpack(figure_tables),
        **{artefacts.CONDITION_SCORES: figure_scores},
    output:
        png=FIGURE_PNG,
        companions=figure_files(FIGURE_PNG)[1:],
    params:
        figure=lambda wildcards: wildcards.name,
        scale=config["scale"],
    log:
        SIMPLE["figure"].log,
    benchmark:
        SIMPLE["figure"].benchmark
    wildcard_constraints:
        name="|".join(FIGURES),
    conda:
        env("core")
    threads: threads_of(SIMPLE["figure"])
    resources:
        **resources_of(SIMPLE["figure"]),
    script:
        "../scripts/figure.py"


rule report:
    input:
        contents=[f for item in PLANNER.report_contents() for f in item.files],
        deviations=os.path.join(workflow.basedir, "docs/deviations.md"),
    output:
        html=path_of("report"),
        manifest=path_of("report_manifest"),
    params:
        contents=PLANNER.report_contents(),
        scale=config["scale"],
        config=config,
        settings={"correlation": config["disentanglement"]["correlation"],
                  "definition": config["disentanglement"]["definition"]},
        title="postrisk report",
    log:
        SIMPLE["report"].log,
    benchmark:
        SIMPLE["report"].benchmark
    conda:
        env("core")
    threads: threads_of(SIMPLE["report"])
    resources:
        **resources_of(SIMPLE["report"]),
    script:
        "../scripts/report.py"
