{#- A ledger's lines carry no id, and a ledger is exported again whole or in part (a month's corrected line, a
    final version): for each cell (the `cell` columns: a month, as month_text_start reads it, and an item; on the raw
    text `2026-11` and `2026-11-01` were two cells, and a re-export so written counted twice) the lines of the newest
    file that has any (the file that arrived later, then the last by path, as every source's newest delivery:
    newest_delivery.sql) say what it is; an older file's lines of that cell are superseded, changed or not. Lines
    repeated within that one file are costs of their own. Portable: one window, each line beside its file's
    arrival. -#}
{% macro newest_file_lines(relation, cell) %}
    select *
    from (
        select
            lines.*,
            rank() over (
                partition by {{ cell | join(', ') }}
                order by arrivals.arrived_at desc nulls last, lines.source_file desc
            ) as file_rank
        from {{ relation }} as lines
        left join {{ cost_pipeline.file_arrivals() }} as arrivals
            on lines.file_sha256 = arrivals.arrived_sha256
    ) as cells
    where file_rank = 1
{% endmacro %}
