{#- A ledger's lines carry no id, and a ledger is exported again whole or in part (a month's corrected line, a
    final version): for each cell (the `cell` columns: a month and an item) the lines of the newest file that has
    any (by file name, as every source's newest delivery) say what it is; an older file's lines of that cell are
    superseded, changed or not. Lines repeated within that one file are costs of their own. Portable: one window. -#}
{% macro newest_file_lines(relation, cell) %}
    select *
    from (
        select
            lines.*,
            max(source_file) over (partition by {{ cell | join(', ') }}) as newest_file
        from {{ relation }} as lines
    ) as cells
    where source_file = newest_file
{% endmacro %}
