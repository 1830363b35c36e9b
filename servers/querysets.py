import operator
from functools import reduce

from django.db import models
from django.db.models import Q

from accounts.principal import ANY


class ServerQuerySet(models.QuerySet):
    def enabled(self):
        return self.filter(is_enabled=True)

    def for_listing(self):
        """Rows for display: without the 384-float embedding and the outbound headers, which no
        listing shows and which cost more to load than everything else on the row."""
        return self.defer("embedding", "sealed_headers")

    def visible_to(self, principal):
        """The servers `principal` may see; every listing of every surface filters through this."""
        sees_all, paths = principal.server_visibility()
        return self.all() if sees_all else self.filter(path__in=paths)


class ToolQuerySet(models.QuerySet):
    def visible_to(self, principal):
        """The tools `principal` is shown (`Principal.shown_tools`): on the servers it sees, the tools its
        tool rules let it call where they reach, every tool where none does. Every surface that shows
        tools filters through this."""
        if principal.is_admin:
            return self.all()
        sees_all, paths = principal.server_visibility()
        seen = self.all() if sees_all else self.filter(server__path__in=paths)
        rules = principal.tool_rules()
        if any(rule.server == ANY and ANY in rule.tools for rule in rules):
            return seen
        shown = [
            Q(server__path=rule.server)
            if ANY in rule.tools
            else Q(server__path=rule.server, name__in=sorted(rule.tools))
            for rule in rules
            if rule.server != ANY
        ]
        everywhere = sorted({tool for rule in rules if rule.server == ANY for tool in rule.tools})
        if any(rule.server == ANY for rule in rules):
            shown.append(Q(name__in=everywhere))
        else:  # servers no tool rule reaches show every tool
            shown.append(~Q(server__path__in=sorted({rule.server for rule in rules})))
        return seen.filter(reduce(operator.or_, shown))
