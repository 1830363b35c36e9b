from django.conf import settings
from django.contrib.auth.models import Group
from django.contrib.postgres.fields import ArrayField
from django.db import models
from pgvector.django import HnswIndex, VectorField

from core.embeddings import EMBEDDING_DIMENSIONS
from core.validators import PATH_MAX_LENGTH, validate_registry_path
from core.visibility import Visibility
from skills.choices import Source, VersionStatus


class Skill(models.Model):
    """An Agent Skill in the registry: what its SKILL.md's frontmatter says, who may see it (as an agent:
    owner, visibility, groups), and its versions. Every surface serves its approved version only."""

    path = models.CharField(max_length=PATH_MAX_LENGTH, unique=True, validators=[validate_registry_path])
    name = models.CharField(max_length=64)
    description = models.CharField(max_length=1024)
    license = models.CharField(max_length=200, blank=True)
    compatibility = models.CharField(max_length=500, blank=True)
    allowed_tools = models.CharField(max_length=2000, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    visibility = models.CharField(
        max_length=16, choices=Visibility.choices, default=Visibility.PUBLIC, db_index=True
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="skills"
    )
    groups = models.ManyToManyField(Group, blank=True, related_name="skills", help_text="groups that see it")
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.UPLOAD)
    source_url = models.CharField(max_length=2048, blank=True)
    mirrored_from = models.ForeignKey(
        "servers.Server",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="mirrored_skills",
        help_text="the MCP server whose skills extension serves it (skills/mirroring.py)",
    )
    approved = models.ForeignKey(
        "SkillVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Found by meaning in /search (search/texts.py skill_text): embedded out of band, as agents are.
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    embedding_dirty = models.BooleanField(default=True, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["path"]
        indexes = [
            HnswIndex(
                name="skill_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            )
        ]

    def __str__(self) -> str:
        return self.path


class SkillVersion(models.Model):
    """One set of a skill's files, by digest: `files` lists each file's path, size and sha256 (sorted by
    path), `digest` is the sha256 of that list (skills/archives.py), `findings` the scan of every file."""

    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="versions")
    digest = models.CharField(max_length=64)
    archive_sha256 = models.CharField(max_length=64)  # of the .tar.gz the registry serves (archives.packed)
    files = models.JSONField(default=list)
    frontmatter = models.JSONField(default=dict)
    findings = models.JSONField(default=list, blank=True)
    attestation = models.TextField(blank=True)  # the registry's signed JWS of its scan (core/attestations.py)
    status = models.CharField(max_length=16, choices=VersionStatus.choices, db_index=True)
    source_ref = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["skill_id", "-created_at"]
        constraints = [models.UniqueConstraint(fields=["skill", "digest"], name="skill_version_once")]
        indexes = [models.Index(fields=["digest"]), models.Index(fields=["archive_sha256"])]

    def __str__(self) -> str:
        return f"{self.skill.path}@{self.digest[:12]}"


class SkillFile(models.Model):
    """One file of a version, its bytes as published."""

    version = models.ForeignKey(SkillVersion, on_delete=models.CASCADE, related_name="stored_files")
    path = models.CharField(max_length=1024)
    size = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    content = models.BinaryField()

    class Meta:
        ordering = ["version_id", "path"]
        constraints = [models.UniqueConstraint(fields=["version", "path"], name="skill_file_once")]

    def __str__(self) -> str:
        return self.path
