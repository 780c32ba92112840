-- Static audiences (docs/imports.md): the member lists audience imports write. A static
-- audience's target_rules name its lists ({"static": {"lists": [...]}}); the audience compiler
-- resolves them to the app's installs, so a static audience works wherever an audience id does.
--   id_type     customer_id | email | install_id
--   identifier  as imported (an e-mail lowercased and trimmed, as profiles.email holds it)
-- Written once per list by the import processor; a replay writes the same rows (natural key).
CREATE TABLE IF NOT EXISTS audience_list_members
(
    app_id String,
    list_id String,
    id_type LowCardinality(String),
    identifier String
)
ENGINE = ReplacingMergeTree
ORDER BY (app_id, list_id, id_type, identifier);
