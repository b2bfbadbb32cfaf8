-- Timesheet entries whose task the batch's own contract version does not know (R3): they are classified and rated
-- under the newest version that knows the task (int_labour_costed), so the night goes on; this lists them for
-- whoever maintains the contract. A warning, not an error.
{{ config(severity='warn', store_failures=true, schema='audit') }}

select batch_id, task, contract_version, classified_under_version, source_file, source_line
from {{ ref('int_labour_costed') }}
where classified_under_version <> contract_version
