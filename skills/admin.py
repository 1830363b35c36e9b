"""Skills in the operator console (administrators): the skills, who sees them and their tags, and their
versions with every file's digest and the scan's findings, approved or blocked here (by the services,
audited)."""

from django.contrib import admin, messages
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from core.admin import ReadOnlyModelAdmin, ServiceModelAdmin
from servers import scanning
from servers.tool_review import diff_sections, findings_table
from skills import services
from skills.choices import VersionStatus
from skills.models import Skill, SkillVersion
from skills.selectors import file_changes


@admin.register(Skill)
class SkillAdmin(ServiceModelAdmin):
    """Who sees a skill (visibility, groups) and its tags are edited here, through the services; what it
    holds comes from its versions alone. Skills are published by the API (docs/skills.md), not added here."""

    list_display = ("path", "description", "visibility", "owner", "source", "updated_at")
    list_filter = ("visibility", "source")
    search_fields = ("path", "name", "description")
    list_select_related = ("owner",)
    fields = (
        "path",
        "name",
        "description",
        "visibility",
        "groups",
        "tags",
        "owner",
        "source",
        "source_url",
        "mirrored_from",
        "approved_digest",
        "license",
        "compatibility",
        "allowed_tools",
        "metadata",
    )
    editable_fields = services.SHARING_FIELDS
    related_fields = ("groups",)
    readonly_fields = tuple(name for name in fields if name not in {*services.SHARING_FIELDS, "groups"})
    filter_horizontal = ("groups",)

    def may_add(self, principal) -> bool:
        return False  # published by the API, from an archive, Git or a mirrored server

    def service_update(self, request, instance, fields: dict):
        return services.skill_sharing_update(actor=self.principal(request), skill=instance, fields=fields)

    def service_relations(self, request, instance, relations: dict) -> None:
        skill = Skill.objects.get(pk=instance.pk)
        if set(skill.groups.all()) != set(relations["groups"]):
            services.skill_sharing_update(
                actor=self.principal(request), skill=skill, fields={}, groups=relations["groups"]
            )

    def service_delete(self, request, instance) -> None:
        services.skill_delete(actor=self.principal(request), skill=instance)

    @admin.display(description="approved version")
    def approved_digest(self, obj: Skill) -> str:
        return obj.approved.digest if obj.approved_id else "none: nothing of it is served"


@admin.register(SkillVersion)
class SkillVersionAdmin(ReadOnlyModelAdmin):
    list_display = ("skill", "digest", "status", "scan", "created_at", "decided_by")
    list_filter = ("status",)
    search_fields = ("skill__path", "digest")
    list_select_related = ("skill", "decided_by")
    fields = (
        "skill",
        "digest",
        "status",
        "file_table",
        "changes",
        "scan_findings",
        "created_at",
        "decided_by",
        "decided_at",
    )
    readonly_fields = fields
    actions = ["approve_selected", "approve_overriding_selected", "block_selected"]

    def has_approve_permission(self, request, obj=None) -> bool:
        return self.principal(request).is_admin

    @admin.display(description="scan")
    def scan(self, obj: SkillVersion) -> str:
        return scanning.worst(obj.findings) or "clean"

    @admin.display(description="files")
    def file_table(self, obj: SkillVersion) -> str:
        rows = format_html_join(
            "",
            "<tr><td><code>{}</code></td><td>{}</td><td><code>{}</code></td></tr>",
            ((entry["path"], entry["size"], entry["sha256"]) for entry in obj.files),
        )
        head = mark_safe(
            '<tr><th scope="col">path</th><th scope="col">bytes</th><th scope="col">sha256</th></tr>'
        )
        return format_html('<table class="scan-findings">{}{}</table>', head, rows)

    @admin.display(description="what changed")
    def changes(self, obj: SkillVersion) -> str:
        """Each file that differs from the approved version's, old beside new (servers/tool_review.py)."""
        approved = obj.skill.approved
        if approved is None or approved.pk == obj.pk:
            return "Nothing to compare: no other version is approved."
        changed = file_changes(approved, obj)
        return diff_sections(changed) if changed else "No file differs."

    @admin.display(description="scan findings")
    def scan_findings(self, obj: SkillVersion) -> str:
        return findings_table(obj.findings)

    def _pending(self, queryset):
        return list(queryset.filter(status=VersionStatus.PENDING).select_related("skill"))

    @admin.action(description="Approve selected versions (serve them)", permissions=["approve"])
    def approve_selected(self, request, queryset):
        pending = self._pending(queryset)
        decided = [version for version in pending if not scanning.holds(version.findings)]
        for version in decided:
            services.skill_version_approve(actor=request.user, version=version)
        self.message_user(request, f"{len(decided)} version(s) approved.")
        if held := len(pending) - len(decided):
            self.message_user(
                request,
                f"{held} version(s) with high-severity scan findings left pending: read the findings, then "
                "use “Approve selected versions despite their scan findings”.",
                messages.WARNING,
            )

    @admin.action(
        description="Approve selected versions despite their scan findings", permissions=["approve"]
    )
    def approve_overriding_selected(self, request, queryset):
        pending = self._pending(queryset)
        for version in pending:
            services.skill_version_approve(actor=request.user, version=version, override=True)
        self.message_user(request, f"{len(pending)} version(s) approved over their scan findings.")

    @admin.action(description="Block selected versions (never serve them)", permissions=["approve"])
    def block_selected(self, request, queryset):
        pending = self._pending(queryset)
        for version in pending:
            services.skill_version_block(actor=request.user, version=version)
        self.message_user(request, f"{len(pending)} version(s) blocked.")
