"""Agents with distinct skills, queries with the agent each should find first, and the real model loaded
once per test session. Test modules take the fixtures by assignment (`name = semantic_fixtures.name`)."""

import pytest

from agents.choices import Visibility
from core.embeddings import get_provider
from tests.factories import AgentFactory


def _skill(name: str, description: str, tags: list[str], examples: list[str]) -> dict:
    return {"id": name, "name": name, "description": description, "tags": tags, "examples": examples}


# path -> (name, description, tags, skills). Near neighbours on purpose (currency vs units vs tax,
# weather vs maps, calendar vs time zones, SQL vs charts) so the ranking has to discriminate.
AGENTS: dict[str, tuple[str, str, list[str], list[dict]]] = {
    "/currency-converter": (
        "Currency Converter",
        "Converts amounts of money between currencies at live exchange rates.",
        ["finance", "fx"],
        [
            _skill(
                "convert_currency",
                "Convert an amount from one currency to another, e.g. USD to EUR",
                ["exchange-rate", "money"],
                ["How much is 50 pounds in yen?", "Convert 20 USD to CHF"],
            )
        ],
    ),
    "/unit-converter": (
        "Unit Converter",
        "Converts physical measurements between metric and imperial units.",
        ["units"],
        [
            _skill(
                "convert_units",
                "Convert lengths, weights, volumes and temperatures",
                ["measurement"],
                ["5 miles in kilometres", "180 pounds to kilograms", "350 Fahrenheit in Celsius"],
            )
        ],
    ),
    "/tax-calculator": (
        "Tax Calculator",
        "Estimates income tax and VAT owed for a given salary or purchase.",
        ["finance", "tax"],
        [_skill("estimate_tax", "Estimate income tax for a salary", ["tax"], ["Tax on a 60k salary"])],
    ),
    "/weather": (
        "Weather Forecaster",
        "Gives current weather conditions and multi-day forecasts for any city.",
        ["weather"],
        [
            _skill(
                "get_forecast",
                "Forecast temperature, rain and wind for the coming days",
                ["forecast", "rain"],
                ["Will it rain in London tomorrow?", "Weather in Berlin this weekend"],
            )
        ],
    ),
    "/maps": (
        "Maps and Directions",
        "Finds places and computes driving, walking and transit routes.",
        ["maps", "navigation"],
        [_skill("route", "Directions between two addresses", ["routing"], ["How do I get to the airport?"])],
    ),
    "/translator": (
        "Translator",
        "Translates text between more than 100 human languages.",
        ["language"],
        [
            _skill(
                "translate_text",
                "Translate a sentence or document into another language",
                ["translation"],
                ["Translate 'good morning' into Spanish", "What is this French text in English?"],
            )
        ],
    ),
    "/grammar": (
        "Grammar Checker",
        "Corrects spelling, grammar and punctuation in English prose.",
        ["writing"],
        [
            _skill(
                "proofread",
                "Fix grammar and spelling mistakes",
                ["proofreading"],
                ["Proofread my cover letter"],
            )
        ],
    ),
    "/code-reviewer": (
        "Code Reviewer",
        "Reviews source code changes and pull requests for bugs, style and security issues.",
        ["developer", "code"],
        [
            _skill(
                "review_diff",
                "Review a diff or pull request and comment on problems",
                ["code-review", "git"],
                ["Review this Python function", "Any bugs in my PR?"],
            )
        ],
    ),
    "/calendar": (
        "Calendar Assistant",
        "Schedules meetings, finds free slots and sends invitations.",
        ["productivity"],
        [
            _skill(
                "schedule_meeting",
                "Create a calendar event with attendees at a free time",
                ["meetings", "scheduling"],
                ["Set up a call with Anna on Friday afternoon"],
            )
        ],
    ),
    "/time-zones": (
        "World Clock",
        "Tells the current time in any city and converts times between time zones.",
        ["time"],
        [
            _skill(
                "time_in_zone", "Current local time in a city", ["timezone"], ["What time is it in Sydney?"]
            )
        ],
    ),
    "/sql-assistant": (
        "SQL Assistant",
        "Writes and explains SQL queries against relational databases.",
        ["data", "database"],
        [
            _skill(
                "write_sql",
                "Turn a question about the data into a SQL SELECT statement",
                ["sql", "postgres"],
                ["Which customers ordered the most last month?"],
            )
        ],
    ),
    "/chart-plotter": (
        "Chart Plotter",
        "Draws bar, line and pie charts from tables of numbers.",
        ["data", "visualisation"],
        [
            _skill(
                "plot_chart",
                "Plot a chart from CSV data",
                ["charts"],
                ["Plot monthly revenue as a line chart"],
            )
        ],
    ),
    "/image-captioner": (
        "Image Captioner",
        "Describes the contents of photographs and images in natural language.",
        ["vision"],
        [
            _skill(
                "caption_image",
                "Generate a caption describing what a picture shows",
                ["image", "caption"],
                ["What is in this picture?"],
            )
        ],
    ),
    "/summarizer": (
        "Summarizer",
        "Condenses long articles, reports and documents into short summaries.",
        ["nlp"],
        [_skill("summarize", "Summarize a long text into key points", ["summary"], ["TL;DR of this report"])],
    ),
    "/speech-to-text": (
        "Transcriber",
        "Transcribes speech in audio and video recordings into written text.",
        ["audio"],
        [_skill("transcribe", "Transcribe an audio file", ["speech"], ["Transcribe this podcast episode"])],
    ),
    "/travel-booking": (
        "Travel Booker",
        "Searches and books flights and hotels.",
        ["travel"],
        [
            _skill(
                "book_flight",
                "Find and book airline tickets between two airports",
                ["flights", "airline"],
                ["A flight from Madrid to Rome next Monday"],
            )
        ],
    ),
    "/nutrition": (
        "Nutrition Facts",
        "Looks up calories, protein, fat and vitamins in foods.",
        ["health", "food"],
        [_skill("food_facts", "Nutritional values of a food item", ["calories"], ["Calories in an avocado"])],
    ),
    "/recipes": (
        "Recipe Finder",
        "Suggests cooking recipes from the ingredients you have.",
        ["food", "cooking"],
        [
            _skill(
                "find_recipe",
                "Recipes that use the given ingredients",
                ["recipes"],
                ["Dinner ideas with eggs and spinach"],
            )
        ],
    ),
    "/stock-market": (
        "Stock Quotes",
        "Reports share prices, market indices and company financials.",
        ["finance", "stocks"],
        [
            _skill(
                "quote", "Latest share price of a listed company", ["equities"], ["How is Tesla stock doing?"]
            )
        ],
    ),
    "/email-assistant": (
        "Email Assistant",
        "Drafts, sends and sorts email messages.",
        ["communication"],
        [_skill("send_email", "Compose and send an email", ["email"], ["Email the report to my manager"])],
    ),
    "/package-tracking": (
        "Parcel Tracker",
        "Tracks shipments and parcel deliveries across carriers.",
        ["logistics"],
        [
            _skill(
                "track_parcel",
                "Where is my package, given its tracking number",
                ["shipping"],
                ["Status of DHL shipment 12345"],
            )
        ],
    ),
    "/legal-contracts": (
        "Contract Analyst",
        "Reads legal contracts and flags risky clauses.",
        ["legal"],
        [_skill("review_contract", "Find risky clauses in a contract", ["law"], ["Is this NDA one-sided?"])],
    ),
    "/password-security": (
        "Password Auditor",
        "Checks password strength and whether credentials appeared in breaches.",
        ["security"],
        [
            _skill(
                "check_password", "Rate a password's strength", ["passwords"], ["Is hunter2 a good password?"]
            )
        ],
    ),
    "/pdf-extractor": (
        "PDF Extractor",
        "Extracts text and tables from PDF files.",
        ["documents"],
        [_skill("extract_pdf", "Pull tables out of a PDF", ["pdf"], ["Get the table on page 3 of this PDF"])],
    ),
    "/music-recommender": (
        "Music Recommender",
        "Recommends songs, albums and playlists based on your taste.",
        ["music"],
        [
            _skill(
                "recommend_songs", "Songs similar to a given artist", ["playlists"], ["Songs like Radiohead"]
            )
        ],
    ),
    "/fitness-coach": (
        "Fitness Coach",
        "Builds workout plans and tracks exercise progress.",
        ["health", "sport"],
        [_skill("plan_workout", "A weekly training plan", ["exercise"], ["A 3-day beginner gym routine"])],
    ),
    "/news-digest": (
        "News Digest",
        "Collects today's top news headlines by topic.",
        ["news"],
        [_skill("headlines", "Top headlines about a topic", ["news"], ["What happened in politics today?"])],
    ),
    "/math-tutor": (
        "Math Tutor",
        "Solves algebra and calculus problems step by step.",
        ["education", "math"],
        [_skill("solve_equation", "Solve an equation with steps", ["algebra"], ["Solve 2x + 3 = 11"])],
    ),
    "/sentiment-analyzer": (
        "Sentiment Analyzer",
        "Classifies the sentiment of reviews and social media posts as positive or negative.",
        ["nlp"],
        [
            _skill(
                "classify_sentiment",
                "Is this review positive?",
                ["opinion"],
                ["Rate the tone of these tweets"],
            )
        ],
    ),
    "/kubernetes-operator": (
        "Kubernetes Operator",
        "Deploys, scales and troubleshoots workloads on Kubernetes clusters.",
        ["devops", "cloud"],
        [
            _skill(
                "scale_deployment", "Scale a deployment's replicas", ["k8s"], ["Why is my pod crash-looping?"]
            )
        ],
    ),
    "/crm-leads": (
        "Sales Leads",
        "Manages customer relationships, sales leads and deal pipelines in the CRM.",
        ["sales"],
        [
            _skill(
                "qualify_lead",
                "Score and qualify a sales lead",
                ["crm"],
                ["Which leads should I call first?"],
            )
        ],
    ),
    "/hr-onboarding": (
        "HR Onboarding",
        "Guides new employees through onboarding paperwork and company policies.",
        ["hr"],
        [
            _skill(
                "onboard",
                "Onboarding checklist for a new hire",
                ["employees"],
                ["What do I need on day one?"],
            )
        ],
    ),
    "/dictionary": (
        "Dictionary",
        "Gives definitions, synonyms and pronunciations of English words.",
        ["language"],
        [
            _skill(
                "define_word", "Definition and synonyms of a word", ["words"], ["What does ephemeral mean?"]
            )
        ],
    ),
    "/flashcards": (
        "Flashcards",
        "Helps memorise vocabulary with spaced-repetition flashcards.",
        ["education"],
        [_skill("quiz", "Quiz me on a deck of cards", ["learning"], ["Quiz me on German verbs"])],
    ),
}

# A query, and the agent it must find first.
QUERIES = [
    ("convert 100 dollars to euros", "/currency-converter"),
    ("will it rain in Paris tomorrow", "/weather"),
    ("translate this paragraph into Japanese", "/translator"),
    ("review my pull request for bugs", "/code-reviewer"),
    ("schedule a meeting with Bob next Tuesday", "/calendar"),
    ("write a SQL query to find the top customers", "/sql-assistant"),
    ("describe what is shown in this photo", "/image-captioner"),
    ("transcribe an audio recording to text", "/speech-to-text"),
    ("book a flight to Tokyo", "/travel-booking"),
    ("how many calories are in a banana", "/nutrition"),
    ("what is the share price of Apple", "/stock-market"),
    ("where is my parcel", "/package-tracking"),
    ("how many kilometres is 26 miles", "/unit-converter"),
    ("what time is it in Tokyo right now", "/time-zones"),
]


@pytest.fixture(scope="session")
def embedding_model():
    """The real all-MiniLM-L6-v2, loaded once for the session (the provider keeps it per process)."""
    provider = get_provider()
    assert len(provider.embed(["warm up"])[0]) == 384
    return provider


@pytest.fixture
def agent_corpus(db, embedding_model):
    """Every agent of AGENTS, public and enabled, embedded by the real embedding function."""
    from search.services import agents_embed

    agents = {
        path: AgentFactory(
            path=path,
            name=name,
            description=description,
            tags=tags,
            skills=skills,
            visibility=Visibility.PUBLIC,
            is_enabled=True,
        )
        for path, (name, description, tags, skills) in AGENTS.items()
    }
    assert agents_embed() == len(AGENTS)
    return agents
